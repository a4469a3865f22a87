from __future__ import annotations

import torch

from app.services.rounding import round_sig


def test_round_sig_keeps_small_numbers_and_short_decimals():
    assert round_sig(torch.tensor([0.91149997, 1.234567e-12, 0.0, 123.456])) == [0.9115, 1.235e-12, 0.0, 123.5]
    assert round_sig(0.33333) == 0.3333


def test_round_sig_gives_the_same_numbers_whatever_the_callers_threads_and_leaves_them_as_they_were():
    values = torch.cat([torch.rand(5000), torch.rand(5000) * 1e-7, torch.randn(5000) * 1e4,
                        torch.tensor([0.0, 1.0, 1e-300, float("inf"), -float("inf")])]).double()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = round_sig(values)
        torch.set_num_threads(2)
        assert round_sig(values) == alone
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
