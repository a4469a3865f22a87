"""A Transformer's decoding step recorded once as a TorchScript graph: the same calls, run from C++.

A decoding step (`DecoderLayer.step` per layer, then the tied output projection) is many small
PyTorch calls on rows of 256 to 1,024 numbers. Made from Python, each call also pays the interpreter
and PyTorch's parsing of its arguments; made from the graph, it does not (bench/floor.py times the
decode both ways). `StepGraph` runs the step once per model under torch.jit.trace, which records
the ATen calls it makes, then makes those calls itself: the same calls on the same tensors in the
same order, so the same numbers, bit for bit (tests/models/test_step_graph.py).

A recording is one path through the step: one new position per sentence, no padding mask, no
switched-off heads, nothing differentiated, and the weights the model held when it was recorded.
`Transformer._decode_step` takes the graph only on that path and runs the Python step otherwise,
and a model whose weights were replaced since (another dtype, a copy) no longer `fits` its graph.
The graph reads the model's own weight tensors (nothing is copied), so the Python step stays the
reference the tests compare it with, and one setting away (Settings.step).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import torch
from torch import nn

STEPS = ("graph", "python")  # how the server runs a Transformer's decoding steps (Settings.step)


class StepGraph:
    """The decoding step of one Transformer (duck-typed: `decoder_layers` with `step_weights` and
    `step`, and `_outputs`), recorded for the first position (no cached keys) and for later ones."""

    def __init__(self, model: nn.Module):
        steps = [layer.step_weights() for layer in model.decoder_layers]
        self.fingerprint = _fingerprint(_read(model, steps))
        with _frozen(model), torch.no_grad():
            self.first, self.next = _record(model, steps, past=False), _record(model, steps, past=True)

    def fits(self, model: nn.Module, steps: list | None = None) -> bool:
        """`model` still holds the weight tensors this graph was recorded with, the same objects with
        the same storage, dtype and fp16 copy (`steps`: its layers' `step_weights()`, if at hand)."""
        now = _read(model, steps)
        return len(now) == len(self.fingerprint) and all(
            tensor is was and tensor.data_ptr() == ptr and tensor.dtype == dtype
            and tensor.__dict__.get("fp16_packed") is packed
            for tensor, (was, ptr, dtype, packed) in zip(now, self.fingerprint, strict=True))

    def __call__(self, x: torch.Tensor, cache, cross_kv):
        """One step, as `Transformer._decode_step` makes it: x (B, d) the new positions' inputs;
        cache: per layer its past keys and values, each (B, h, t0, dh), or None at the first step;
        cross_kv: per layer the source's keys and values, each (B, h, S, dh). Returns logits (B, V),
        {"decoder": (B, L, h, 1, t0 + 1), "cross": (B, L, h, 1, S)} and the new cache."""
        if cache is None:
            run, per_layer = self.first, cross_kv
        else:  # per layer: past keys, past values, the source's keys, its values
            run, per_layer = self.next, [(*past, *cross) for past, cross in zip(cache, cross_kv, strict=True)]
        logits, self_w, cross_w, *kv = run(x, *[t for tensors in per_layer for t in tensors])
        return logits, {"decoder": self_w, "cross": cross_w}, list(zip(kv[::2], kv[1::2], strict=True))

    def __deepcopy__(self, memo):
        return None  # a copy holds other tensors: it runs the Python step (or records its own graph)


def _record(model: nn.Module, weights: list, past: bool):
    """torch.jit.trace of the step reading `weights` (its layers' `step_weights()`) on a
    one-sentence example (sizes are read from the inputs at every call, so any batch, source and
    past length runs through the same graph)."""
    step = type(model.decoder_layers[0]).step
    per_layer = 4 if past else 2  # [past k, past v,] cross k, cross v

    def decode_step(x, *tensors):
        self_ws, cross_ws, cache = [], [], []
        for i, w in enumerate(weights):
            mine = tensors[i * per_layer: (i + 1) * per_layer]
            x, self_w, cross_w, kv = step(x, w, mine[:2] if past else None, mine[-2:])
            self_ws.append(self_w)
            cross_ws.append(cross_w)
            cache.extend(kv)
        logits, maps = model._outputs(x, self_ws, cross_ws)
        return logits, maps["decoder"], maps["cross"], *cache

    like = weights[0].sqrt_d
    heads, d_head = weights[0].n_heads, weights[0].d_head
    keys = like.new_zeros(1, heads, 1, d_head)  # one earlier position, and one source piece
    example = (like.new_zeros(1, heads * d_head), *[keys] * (len(weights) * per_layer))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.jit: see `available`
        return torch.jit.trace(decode_step, example, check_trace=False)


def _read(model: nn.Module, steps: list | None = None) -> list[torch.Tensor]:
    """The weight tensors a decoding step reads: each layer's `step_weights()` (every (weight, bias)
    pair and the stacked W_q, W_k, W_v), the final norm's, the tied embedding and the output bias.
    (Not model.parameters(), which walks every module, for every sentence.)"""
    steps = steps if steps is not None else [layer.step_weights() for layer in model.decoder_layers]
    tensors = [model.decoder_norm.weight, model.decoder_norm.bias, model.embed.weight, model.out_bias]
    for weights in steps:
        tensors += [t for field in weights if isinstance(field, tuple) for t in field]
    return tensors


def _fingerprint(tensors: list[torch.Tensor]) -> list[tuple]:
    """Each tensor with its storage, dtype and fp16 copy (models/precision.py) as recorded."""
    return [(t, t.data_ptr(), t.dtype, t.__dict__.get("fp16_packed")) for t in tensors]


@contextmanager
def _frozen(model: nn.Module):
    """Parameters that do not require gradients while recording (a graph holds its weights as
    constants, which may not); the graph only ever runs with gradients off."""
    wanted = [p.requires_grad for p in model.parameters()]
    model.requires_grad_(False)
    try:
        yield
    finally:
        for p, grad in zip(model.parameters(), wanted, strict=True):
            p.requires_grad_(grad)


def available() -> bool:
    """This torch still records graphs (torch.jit.trace is deprecated in favour of torch.export)."""
    return hasattr(torch.jit, "trace")


def served_step(step: str, device: str | torch.device) -> str:
    """How a model on `device` runs its decoding steps when `step` (one of STEPS) is asked for:
    a recorded graph on a CPU (where a step's many small calls cost most), else the Python step."""
    if step not in STEPS:
        raise ValueError(f"step {step!r}: one of {', '.join(STEPS)}")
    return step if torch.device(device).type == "cpu" and available() else "python"


def with_step(model: nn.Module, step: str) -> nn.Module:
    """`model` with its decoding step recorded (a Transformer, `step` "graph" on a CPU); returns it."""
    if not hasattr(model, "step_graph"):
        return model  # recurrent models: their step is a few calls
    device = next(model.parameters()).device
    model.step_graph = StepGraph(model) if served_step(step, device) == "graph" else None
    return model


def step_of(model: nn.Module) -> str:
    """"graph" when `model` decodes through a recorded graph that fits it, else "python"."""
    graph = getattr(model, "step_graph", None)
    return "graph" if graph is not None and graph.fits(model) else "python"
