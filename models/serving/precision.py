"""Weights held in memory as fp16, products computed in fp32: a decoding step reads half the bytes.

A decoding step multiplies one row by every weight matrix of the decoder, and on a CPU that product
is bound by reading the matrix from memory (bench/floor.py). The shipped checkpoints store their
weights in fp16, so an fp16 copy of a served weight holds exactly the numbers the fp32 model
computes with. fbgemm's fp16 product widens each block of such a copy to fp32 and multiplies and
sums in fp32: the same formula on the same numbers, only summed in another order, like the
input-major layout (layout.py). bench/fidelity.py measures what that order changes.

`half_weights` swaps each `nn.Linear` of a model for a `HalfLinear` and its tied embedding
(models.outputs.TiedEmbedding) for a `HalfTiedEmbedding`: the same modules holding the same
Parameters (same state-dict names), each with an fp16 copy of its weight beside them. Only weights
that fp16 holds exactly are copied: an untrained model or an int8 training snapshot keeps computing
with its fp32 weights. The fp32 weights stay, for everything that differentiates (a gradient needs
the fp32 product) and for the general passes' parity tests.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import forward_ad

from models.outputs import TiedEmbedding


def packs_fp16() -> bool:
    """This torch has fbgemm's fp16 product (else every product stays fp32)."""
    engine = torch.backends.quantized.engine
    return hasattr(torch, "fbgemm_pack_gemm_matrix_fp16") and engine in ("x86", "fbgemm")


class HalfCopy:
    """An fp16 copy of a weight (out, in), packed for fbgemm's product, and the zero bias that
    product needs when the layer has none."""

    def __init__(self, weight: torch.Tensor):
        with torch.no_grad(), warnings.catch_warnings():
            # fbgemm's bindings warn, once per process and operator, that they may go in a later
            # torch: here, where the copy is made, not at a request's first product
            warnings.filterwarnings("ignore", message=r"fbgemm_\w+ is deprecated", category=UserWarning)
            self.packed = torch.fbgemm_pack_gemm_matrix_fp16(weight.detach().contiguous())
            self.zero_bias = torch.zeros(weight.size(0))
            torch.fbgemm_linear_fp16_weight(torch.zeros(1, weight.size(1)), self.packed, self.zero_bias)

    def linear(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """x W^T + b, (..., in) -> (..., out), from the fp16 copy; F.linear on the fp32 `weight`
        when the product is differentiated."""
        if _differentiated(x, weight):
            return F.linear(x, weight, bias)
        if bias is None:
            bias = self.zero_bias
        # any leading dims: the product takes them as rows itself, so a recorded graph (graph.py)
        # reads no size to reshape around it
        return torch.fbgemm_linear_fp16_weight(x, self.packed, bias)


def _differentiated(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Autograd records this product, or forward-mode differentiation (torch.func.jvp, the gradients chapter's
    step factors) carries a tangent through it: the fp16 product has no derivative, so those take
    the fp32 one. A jvp runs under no_grad on tensors that do not require grad; its inputs are dual
    tensors, which `forward_ad.unpack_dual` (public) tells apart."""
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad):
        return True
    return forward_ad.unpack_dual(x).tangent is not None


class HalfLinear(nn.Linear):
    """nn.Linear (the same Parameters, the same state-dict names) whose product reads `half`, an
    fp16 copy of its weight, when nothing is differentiated."""

    half: HalfCopy

    @classmethod
    def of(cls, linear: nn.Linear) -> HalfLinear:
        # built on the meta device (no memory, no draw from the random generator), then given the
        # layer's own Parameters
        served = cls(linear.in_features, linear.out_features, linear.bias is not None, device="meta")
        served.weight, served.bias = linear.weight, linear.bias
        served.half = HalfCopy(linear.weight)
        return served.train(linear.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.half.linear(x, self.weight, self.bias)


class HalfTiedEmbedding(TiedEmbedding):
    """TiedEmbedding whose output projection reads `half`, an fp16 copy of the embedding."""

    half: HalfCopy

    @classmethod
    def of(cls, embed: TiedEmbedding) -> HalfTiedEmbedding:
        # given the embedding's own weight, nothing is drawn or allocated (an embedding built on the
        # meta device draws through torch's Python decompositions, whose first use imports the
        # compiler stack: seconds of start-up)
        served = cls(embed.num_embeddings, embed.embedding_dim, embed.padding_idx, _weight=embed.weight)
        served.weight = embed.weight  # the Parameter itself, not a new one on the same numbers
        served.half = HalfCopy(embed.weight)
        return served.train(embed.training)

    def logits(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return self.half.linear(x, self.weight, bias)


def _holds_exactly(weight: torch.Tensor) -> bool:
    return weight.dtype == torch.float32 and torch.equal(weight.half().float(), weight)


HALVES = {nn.Linear: HalfLinear, TiedEmbedding: HalfTiedEmbedding}  # each module kind and its served kind


def half_weights(model: nn.Module) -> nn.Module:
    """Swap every `nn.Linear` of `model` for a HalfLinear and a TiedEmbedding for a
    HalfTiedEmbedding, where fp16 holds the weight exactly and it lies on the CPU; returns `model`
    (itself, when it is one of those modules)."""
    def swap(module: nn.Module) -> nn.Module:
        half = HALVES.get(type(module))
        if half is None or module.weight.device.type != "cpu" or not _holds_exactly(module.weight):
            return module
        return half.of(module)

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            served = swap(child)
            if served is not child:
                setattr(parent, name, served)
    return swap(model)


def precision_of(model: nn.Module) -> str:
    """"fp16-weights" when some product of `model` reads an fp16 copy, else "fp32"."""
    halves = tuple(HALVES.values())
    return "fp16-weights" if any(isinstance(m, halves) for m in model.modules()) else "fp32"
