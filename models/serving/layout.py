"""Where a weight's numbers lie in memory, chosen for decoding one position at a time.

`nn.Linear` keeps W as (out, in) in row-major order and computes x W^T. A decoding step multiplies
one row x by every weight matrix of the decoder, and on a CPU that product is bound by reading W
from memory. MKL streams W^T much faster when W^T is itself the contiguous, row-major operand,
that is when W is stored column by column, as for the 8,000 x 256 output projection
(bench/floor.py reports the whole decode both ways).
For matrices with fewer outputs than inputs (the feed-forward W_2: 256 x 1024) the row-major
order is the faster one, so only wide matrices are reordered.

The numbers stay the same fp32 numbers, and so does every formula: only the order in which a dot
product's terms are summed may change, so results agree with the stored layout within float
rounding (tests/models/serving/test_layout.py). The checkpoints keep the stored layout; this is
applied to the served model only.
"""

from __future__ import annotations

import torch
from torch import nn


def is_wide(weight: torch.Tensor) -> bool:
    """A 2-D weight (out, in) with more outputs than inputs: faster column by column."""
    return weight.dim() == 2 and weight.size(0) > weight.size(1)


def input_major(model: nn.Module) -> nn.Module:
    """Store every wide 2-D weight of `model` column by column, in place (same values, same shape,
    strides (1, out)); returns `model`. Tied weights stay tied: the module is restrided once."""
    for module in model.modules():
        for param in module.parameters(recurse=False):
            if is_wide(param) and param.stride() != (1, param.size(0)):
                with torch.no_grad():
                    param.data = param.data.t().contiguous().t()  # (out, in) view of an (in, out) block
    return model


def layout_of(model: nn.Module) -> str:
    """"input-major" when every wide weight is stored column by column, else "as-stored"."""
    wide = [p for p in model.parameters() if is_wide(p)]
    columns = all(p.stride() == (1, p.size(0)) for p in wide)
    return "input-major" if wide and columns else "as-stored"
