"""The model as served: a trained model made fast to decode, with the same numbers.

The models (models/transformer.py, seq2seq.py, ...) are written as derived and trained as they are.
`served` builds what the server runs from one of them, in this order:

    layout.py      where the weights' numbers lie in memory (input-major: wide matrices column by
                   column, faster one-row products on a CPU)
    precision.py   fp16 copies of the weights that fp16 holds exactly, for the products
    step.py        a Transformer's one-position decoding step, reading its weights gathered once
    graph.py       that step, and the encoder, recorded as TorchScript graphs and replayed from C++
    recurrent.py   a recurrent encoder-decoder's decoding step, recorded the same way

Each keeps every formula: the layout and the fp16 copies only change the order in which a dot
product's terms are summed (the same within float rounding), the step and the graph make the same
calls on the same numbers (the same bit for bit). The settings and their allowed values are
declared once, in options.py (torch-free: app/config.py and app/schemas.py read them).

This module imports torch only when a model is served, so importing `options` stays light.
"""

from __future__ import annotations

from models.serving.options import LAYOUTS, PRECISIONS, STEPS, check

__all__ = ["LAYOUTS", "PRECISIONS", "STEPS", "on_device", "served", "step_of"]


def on_device(layout: str, precision: str, step: str, device) -> tuple[str, str, str]:
    """What a model on `device` is served with when `layout`, `precision` and `step` are asked for
    (ValueError for a value that is none of the allowed ones). Off the CPU every fast path is off:
    cuBLAS reads either layout at full speed, fbgemm's fp16 products and the recorded step's gain
    are a CPU's."""
    import torch

    from models.serving.graph import available
    from models.serving.precision import packs_fp16

    check(layout, precision, step)
    if torch.device(device).type != "cpu":
        return "as-stored", "fp32", "python"
    return layout, precision if packs_fp16() else "fp32", step if available() else "python"


def served(model, layout: str, precision: str, step: str = "graph"):
    """`model` as the server runs it on its device, with `layout`, `precision` and `step` asked for
    (see `on_device`): its weights reordered and given fp16 copies in place, a Transformer wrapped
    as a ServedTransformer that decodes through its one-position step, and a recurrent model as a
    ServedSeq2Seq; either decodes through its step recorded as a graph when `step` is "graph".
    Returns the served model; it shares the Parameters of `model`."""
    from models.seq2seq import Seq2Seq
    from models.serving.graph import EncoderGraph, RowsGraph, StepGraph
    from models.serving.layout import input_major
    from models.serving.precision import half_weights
    from models.serving.recurrent import EncoderStepGraph, RecurrentStepGraph, ServedSeq2Seq
    from models.serving.step import ServedTransformer
    from models.transformer import Transformer

    layout, precision, step = on_device(layout, precision, step, next(model.parameters()).device)
    if layout == "input-major":
        model = input_major(model)
    if precision == "fp16-weights":
        model = half_weights(model)
    if isinstance(model, Transformer):
        model = ServedTransformer(model)
        if step == "graph":
            model.graph, model.encoder_graph = StepGraph(model), EncoderGraph(model)
            model.rows_graph = RowsGraph(model)
    elif isinstance(model, Seq2Seq):
        model = ServedSeq2Seq(model)
        if step == "graph":
            model.graph, model.encoder_graph = RecurrentStepGraph(model), EncoderStepGraph(model)
    return model


def step_of(model) -> str:
    """"graph" when `model` decodes through a recorded graph, else "python"."""
    return "graph" if getattr(model, "graph", None) is not None else "python"
