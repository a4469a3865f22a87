"""POST /api/gradients as a function: the the gradients chapter probe (models/probes/gradients.py) on the
sentence's pieces repeated to a length, for each recurrent model, as JSON."""

from __future__ import annotations

import math
import threading

from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.runtime.scheduler import EXPERIMENT
from app.runtime.shares import Meter
from app.schemas.gradients import GateMeans, Gates, GradientCurve, Gradients, GradientsRequest
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from models.decoding import Stopped
from models.probes.gradients import DIRECTIONS, ITERATIONS, jacobian_norms, most_varying_units, step_factors

GATE_UNITS = 48  # units shown in the gate heatmaps
GATES = ("input", "forget", "output")
DEFINITION = (
    "norm[i] = Frobenius norm of d h_T / d x_(T-1-i): the Jacobian of the final encoder hidden state "
    f"h_T with respect to the input embedding distance[i] positions before the last token; estimated "
    f"with K = {DIRECTIONS} (or H if smaller) fixed-seed random orthonormal directions Q (H x K) as "
    "sqrt(H/K) * ||Q^T J||_F (exact when K = H), in one batched backward pass, dropout off. "
    "With factors: state_norm[i] = ||d h_T / d s_(T-1-i)||_F (s: the recurrent state, (h, c) for an "
    "LSTM), estimated the same way; shrink[i] = state_norm[i+1] / state_norm[i], whose running product "
    "is state_norm / state_norm[0]; step_factor[i] = top singular value of d s_t / d s_(t-1) at "
    f"t = T-1-i (power iteration, {ITERATIONS} steps, so from slightly below), which bounds shrink[i] "
    "from above (||A B||_F <= ||A||_F ||B||_2); hidden_factor: the same for d h_t / d h_(t-1) with "
    "c_(t-1) fixed; forget_mean: the LSTM's mean forget gate, the cell path's factor."
)


def gradient_curves(
    registry: ModelRegistry, text: str, length: int | None = None, names: tuple[str, ...] = (),
    cancel: threading.Event | None = None, initialized: bool = False, factors: bool = False,
    meter: Meter | None = None,
) -> Gradients:
    """Curves for `names` (default: the recurrent models without attention) on the sentence's
    pieces repeated to `length`, and the gates of the first model that has them. `initialized`:
    each model at its seeded initialization too; `factors`: each curve with its per-step factors
    (see `factor_fields`). `cancel` set before the model thread gets to it: nothing is computed; set
    while it runs (a newer text came): it stops at its next pause (Stopped). `meter`: the model
    thread's seconds it took (the client's share is charged them)."""
    source = registry.source(text)
    longest = registry.limits.max_gradient_length
    ids = repeat_to(source.ids, min(len(source.ids), longest) if length is None else length, longest)
    entries = recurrent_models(registry, names)
    key = ("gradients", source.text, len(ids), tuple(e.name for e in entries), initialized, factors)
    worker = registry.jobs.thread

    def pause() -> None:  # between steps, the compares of typing readers run (app/runtime/model_thread.py)
        worker.pause()
        if cancel is not None and cancel.is_set():
            raise Stopped  # up to seconds of work a superseded text would still cost

    def compute() -> Gradients:
        curves, gates = [], None
        for entry in entries:
            for weights in ("trained", "initialized") if initialized else ("trained",):
                model = entry.model if weights == "trained" else registry.states.initialized(entry.name)
                reach = jacobian_norms(model, ids)
                pause()
                curves.append(GradientCurve(model=entry.name, weights=weights, distance=list(range(len(ids))),
                                            norm=round_sig(reach.inputs),
                                            **(factor_fields(model, ids, reach, pause) if factors else {})))
                if gates is None and reach.gates is not None and weights == "trained":
                    gates = gate_summary(entry.name, reach.gates)
        return Gradients(tokens=registry.tokenizer.pieces(ids), definition=DEFINITION, directions=DIRECTIONS,
                         curves=curves, gates=gates)

    return registry.jobs.result(key, compute, cancel, EXPERIMENT, meter)


def factor_fields(model, ids: list[int], reach, between=None) -> dict:
    """The per-step fields of one GradientCurve: by distance from the end: the state-gradient norm, how much
    it shrank crossing each step (whose running product is the state curve), and the step
    Jacobians' top singular values that bound that shrink (and, for an LSTM, the hidden path's and
    the mean forget gate)."""
    steps = step_factors(model, ids, between=between)
    fields = {"state_norm": round_sig(reach.states), "shrink": round_sig(reach.shrink),
              "step_factor": round_sig(steps.state), "hidden_factor": round_sig(steps.hidden)}
    if steps.forget is not None:
        fields["forget_mean"] = round_sig(steps.forget)
    return fields


def repeat_to(ids: list[int], length: int, longest: int) -> list[int]:
    """The sentence's pieces repeated (and cut) to exactly `length`, 1 to `longest`."""
    if not 1 <= length <= longest:
        raise InvalidOptionError("length", f"must be 1 to {longest}, got {length}")
    return (ids * math.ceil(length / len(ids)))[:length]


def recurrent_models(registry: ModelRegistry, names: tuple[str, ...]) -> list[LoadedModel]:
    """The requested models, each with a recurrent encoder; by default every loaded recurrent
    model without attention (the plain RNN and the LSTM)."""
    if not names:
        entries = [e for e in registry.models.values()
                   if e.capabilities.recurrent and not e.capabilities.cross_attention]
        if not entries:
            loaded = ", ".join(registry.names) or "none"
            raise UnknownModelError(f"no recurrent model without attention is loaded; loaded: {loaded}")
        return entries
    entries = [registry.get(n) for n in names]
    for entry in entries:
        if not entry.capabilities.recurrent:
            raise InvalidOptionError("models", f"{entry.name!r} has no recurrent encoder")
    return entries


def gate_summary(name: str, gates) -> Gates:
    """gates (T, 3, H) of model `name` -> the GATE_UNITS units whose gates vary most (token x unit
    per gate) and each gate's mean over all units per token, rounded for JSON."""
    units = most_varying_units(gates, GATE_UNITS)
    per_gate = {gate: round_sig(gates[:, g, units]) for g, gate in enumerate(GATES)}  # (T, units) each
    means = {gate: round_sig(gates[:, g].mean(dim=-1)) for g, gate in enumerate(GATES)}
    return Gates(model=name, units=units.tolist(), **per_gate, mean=GateMeans(**means))


def answer(registry: ModelRegistry, body: GradientsRequest, cancel: Cancel = None,
           meter: Meter | None = None) -> Gradients:
    return gradient_curves(registry, body.text, body.length, tuple(body.models), cancel, body.initialized,
                           body.factors, meter)


PAGE = PageRequest("/api/gradients", GradientsRequest, answer,
                   lambda v: [{"text": v.text, "length": v.length, "initialized": True, "factors": True}])
