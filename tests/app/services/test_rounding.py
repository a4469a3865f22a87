from __future__ import annotations

import torch

from app.services.rounding import round_sig


def test_round_sig_keeps_small_numbers_and_short_decimals():
    assert round_sig(torch.tensor([0.91149997, 1.234567e-12, 0.0, 123.456])) == [0.9115, 1.235e-12, 0.0, 123.5]
    assert round_sig(0.33333) == 0.3333
