"""Floats in responses: short enough to keep payloads small, precise enough to plot."""

from __future__ import annotations

import torch

from models.serving.threads import intra_op


def round_sig(values, digits: int = 4):
    """`values` (a tensor, a float or nested lists of them) as floats kept to `digits`
    significant digits: nested lists for a tensor or a list, a float for a float.

    Significant digits, not decimals: a vanishing gradient of 1e-12 must stay visible on a log
    scale, and many tiny attention weights rounded to 0 would let a row's sum drift from 1.
    Dividing integers by exact powers of ten gives the double nearest to the short decimal, so
    the JSON stays short ("0.9115", not "0.91149997711").

    On one intra-op thread: a response's numbers are a few thousand, and with more threads MKL
    still splits `log10` across them, and waking the sleeping ones costs more than the work
    (bench/README.md; the same numbers either way: tests/app/services/test_rounding.py).
    """
    with intra_op(1):
        if isinstance(values, torch.Tensor):
            x = values.detach().double().cpu()
        else:
            x = torch.tensor(values, dtype=torch.float64)
        exponent = torch.floor(torch.log10(x.abs().clamp_min(1e-300)))
        scale = torch.pow(10.0, digits - 1 - exponent)
        rounded = torch.round(x * scale) / scale
        return torch.where(torch.isfinite(rounded), rounded, x).tolist()
