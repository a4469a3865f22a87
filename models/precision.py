"""Weights held in memory as fp16, products computed in fp32: a decoding step reads half the bytes.

A decoding step multiplies one row by every weight matrix of the decoder, and on a CPU that product
is bound by reading the matrix from memory (bench/floor.py). The shipped checkpoints store their
weights in fp16, so an fp16 copy of a served weight holds exactly the numbers the fp32 model
computes with. fbgemm's fp16 product widens each block of such a copy to fp32 and multiplies and
sums in fp32: the same formula on the same numbers, only summed in another order, like the
input-major layout (models/layout.py). bench/fidelity.py measures what that order changes.

Only weights that fp16 holds exactly are copied: an untrained model or an int8 training snapshot
keeps computing with its fp32 weights. The fp32 weights stay where they were, for everything that
differentiates (a gradient needs the fp32 product) and for the general passes' parity tests.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from models.layout import with_layout
from models.step_graph import with_step

PRECISIONS = ("fp32", "fp16-weights")  # what the server can serve with (Settings.precision)

# The fp16 product lives in torch's fbgemm bindings, which warn that they may go in a later torch;
# `packs_fp16` says whether this torch has them (else every product stays fp32).
warnings.filterwarnings("ignore", message=r"fbgemm_\w+ is deprecated", category=UserWarning)


def packs_fp16() -> bool:
    engine = torch.backends.quantized.engine
    return hasattr(torch, "fbgemm_pack_gemm_matrix_fp16") and engine in ("x86", "fbgemm")


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x W^T + b, (..., in) -> (..., out): with W's fp16 copy when it has one and nothing is being
    differentiated, else F.linear in fp32."""
    copies = weight.__dict__  # the tensor's own attributes: far cheaper than getattr on a tensor
    packed = copies.get("fp16_packed")
    if packed is None or _differentiated(x, weight):
        return F.linear(x, weight, bias)
    if bias is None:
        bias = copies["fp16_zero_bias"]
    if x.dim() == 2:  # a decoding step's rows
        return torch.fbgemm_linear_fp16_weight(x, packed, bias)
    rows = x.reshape(-1, x.size(-1))
    return torch.fbgemm_linear_fp16_weight(rows, packed, bias).view(*x.shape[:-1], -1)


def _differentiated(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Autograd records this product, or a torch.func transform (a Jacobian, vmap) runs it."""
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        return True
    return torch._C._functorch.is_functorch_wrapped_tensor(x)


class Linear(nn.Linear):
    """nn.Linear (same parameters, same state-dict names) whose product is `linear`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


def _holds_exactly(weight: torch.Tensor) -> bool:
    return weight.dtype == torch.float32 and torch.equal(weight.half().float(), weight)


def half_weights(model: nn.Module) -> nn.Module:
    """Give every `Linear` weight of `model`, and its tied output embedding (`model.embed`), an fp16
    copy for `linear` to read, where fp16 holds the weight exactly; returns `model`. CPU only."""
    weights = [m.weight for m in model.modules() if isinstance(m, Linear)]
    if isinstance(getattr(model, "embed", None), nn.Embedding):
        weights.append(model.embed.weight)
    for weight in weights:
        if weight.device.type == "cpu" and _holds_exactly(weight):
            _copy(weight)
    for module in model.modules():
        _stack_qkv(module)
    return model


def _copy(weight: torch.Tensor) -> None:
    with torch.no_grad():
        weight.fp16_packed = torch.fbgemm_pack_gemm_matrix_fp16(weight.detach().contiguous())
        weight.fp16_zero_bias = torch.zeros(weight.size(0))


def _stack_qkv(module: nn.Module) -> None:
    """An attention that asks for it (a `stacked_qkv` slot: the Transformer decoder's
    self-attention) and whose W_q, W_k and W_v all have fp16 copies gets them stacked into one: a
    decoding step's three products become one, the same sums of the same numbers (each output is
    its own dot product), and a product's fixed cost is paid once."""
    parts = [getattr(module, name, None) for name in ("W_q", "W_k", "W_v")]
    if not hasattr(module, "stacked_qkv") or not all(hasattr(p.weight, "fp16_packed") for p in parts):
        return
    with torch.no_grad():
        weight = torch.cat([p.weight.detach() for p in parts])  # (3d, d)
        bias = torch.cat([p.bias.detach() for p in parts])
    _copy(weight)
    module.stacked_qkv = (weight, bias)


def precision_of(model: nn.Module) -> str:
    """"fp16-weights" when some weight of `model` has an fp16 copy for its products, else "fp32"."""
    return "fp16-weights" if any(hasattr(p, "fp16_packed") for p in model.parameters()) else "fp32"


def served_precision(precision: str, device: str | torch.device) -> str:
    """The precision a model on `device` is served with when `precision` (one of PRECISIONS) is
    asked for: fp16 copies need a CPU and torch's fbgemm bindings, else fp32."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: one of {', '.join(PRECISIONS)}")
    cpu = torch.device(device).type == "cpu"
    return precision if cpu and packs_fp16() else "fp32"


def with_precision(model: nn.Module, precision: str) -> nn.Module:
    """`model` as served with `precision` asked for (see `served_precision`)."""
    device = next(model.parameters()).device
    return half_weights(model) if served_precision(precision, device) == "fp16-weights" else model


def served(model: nn.Module, layout: str, precision: str, step: str = "graph") -> nn.Module:
    """`model` as the server runs it: its weights in `layout`'s order, with `precision`'s copies,
    and its decoding step run as `step` says (models/step_graph.py), recorded from those."""
    return with_step(with_precision(with_layout(model, layout), precision), step)
