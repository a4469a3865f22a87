"""POST /api/recap as a function: chapter 11's rows that depend on the reader's sentence, each one
number measured on it, gathered in one request so the recap is complete before any chapter is
opened. (The rows that need no sentence, chapters 1, 4 and 9, the page writes from the catalogue.)

Each number comes from the same service call its chapter's request makes, with the same
arguments, so the recap and the chapter share cache entries and never disagree. The cheap form is
chosen where a chapter's default is heavy: chapter 3's gradient at the sentence's own length
instead of its repeats to 80 pieces, chapter 6's step counts instead of a timing (which only the
reader starts).
"""

from __future__ import annotations

import logging
import math
import threading

from app import defaults
from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.schemas import Recap, RecapRow, TextRequest
from app.services.gradients import gradient_curves
from app.services.order import order as shuffled
from app.services.page import Cancel, PageRequest
from app.services.predict import prediction
from app.services.recurrence import recurrence as read_sentence
from app.services.scaling import scaling as saturation
from app.services.scores import attention_scores

log = logging.getLogger("attention_lab")
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def fmt(x: float | None) -> str:
    """Two significant digits, very small or large numbers as 1.1×10⁻¹³: the page's own format."""
    if x is None or not math.isfinite(x):
        return "–"
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{mantissa}×10{str(int(exponent)).translate(SUPERSCRIPT)}"
    return f"{x:.0f}" if x >= 10 else f"{x:#.2g}"


def piece(token: str) -> str:
    """A BPE piece as a reader sees it, quoted: the word-start marker dropped."""
    text = "␣" if token == "▁" else token.removeprefix("▁")
    return f"“{text}”"


def first(registry: ModelRegistry, test) -> LoadedModel | None:
    return next((m for m in registry.models.values() if test(m.capabilities)), None)


def recap(registry: ModelRegistry, text: str, cancel: threading.Event | None = None) -> Recap:
    """The rows for `text`, in the chapters' order; a chapter that cannot answer (its model is not
    loaded) has no row. `cancel` set (the client hung up): the work not started is skipped."""
    registry.source(text)  # an invalid text is refused here (422), before any work
    rows = []
    for row in (recurrence, gradients, scores, steps, scaling, order, predict):
        try:
            rows.append(row(registry, text, cancel))
        except (UnknownModelError, InvalidOptionError) as error:
            log.warning("recap: %s gave no row: %s", row.__name__, error)
    return Recap(rows=[r for r in rows if r is not None])


def recurrence(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    if first(registry, lambda c: c.recurrent and c.attention is None and not c.gates) is None:
        return None
    answer = read_sentence(registry, text, None, cancel)
    most = max(range(len(answer.change)), key=answer.change.__getitem__)
    return RecapRow(chapter=2, text=f"the {answer.model}'s state moves most at {piece(answer.tokens[most])} "
                                    f"(‖h_t − h_(t−1)‖ = {fmt(answer.change[most])}).")


def gradients(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    if first(registry, lambda c: c.recurrent and c.attention is None) is None:
        return None
    answer = gradient_curves(registry, text, None, (), cancel)
    back = len(answer.tokens) - 1
    said = [f"{fmt(c.norm[back] / c.norm[0] if c.norm[0] > 0 else None)}× for {c.model}" for c in answer.curves]
    return RecapRow(chapter=3, text=f"{back} pieces back from the end of your sentence, the gradient reaching "
                                    f"the input, as a multiple of the last piece's: {', '.join(said)}.")


def scores(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    model = first(registry, lambda c: c.recurrent and c.cross_attention)
    if model is None:
        return None
    answer = attention_scores(registry, text, model.name, 0, 1.0, cancel)
    onto = max(range(len(answer.weights)), key=answer.weights.__getitem__)
    return RecapRow(chapter=5, text=f"{model.name}: {piece(answer.query_token)} puts {fmt(answer.max_weight)} "
                                    f"of its weight on {piece(answer.source_tokens[onto])}.")


def steps(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    recurrent = first(registry, lambda c: c.architecture == "lstm") or first(registry, lambda c: c.recurrent)
    parallel = first(registry, lambda c: not c.recurrent)
    if recurrent is None or parallel is None:
        return None
    pieces = len(registry.source(text).ids)
    layers = parallel.capabilities.layers
    return RecapRow(chapter=6, text=f"on your sentence's {pieces} pieces, {recurrent.name}'s encoder takes "
                                    f"{pieces} steps one after another; {parallel.name}'s, {layers} layers, "
                                    "each over every piece at once.")


def scaling(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    if first(registry, lambda c: c.switches) is None:
        return None
    answer = saturation(registry, text, cancel=cancel)
    at = answer.sampled.at_model_d_k
    return RecapRow(chapter=7, text=f"at {answer.model}'s d_k = {answer.d_k}, random scores' largest "
                                    f"softmax weight is {fmt(at['unscaled'].max_weight)} unscaled, "
                                    f"{fmt(at['scaled'].max_weight)} divided by √d_k.")


def order(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    if first(registry, lambda c: c.switches) is None:
        return None
    checks = shuffled(registry, text, seed=defaults.SEED, cancel=cancel).checks
    return RecapRow(chapter=8, text="shuffled, with positional encoding off the encoder's maps differ by "
                                    f"{fmt(checks['pe_off'].max_abs_difference)} (rounding); on, by "
                                    f"{fmt(checks['pe_on'].max_abs_difference)}.")


def predict(registry: ModelRegistry, text: str, cancel) -> RecapRow | None:
    model = first(registry, lambda c: "encoder" in c.attention_kinds)
    if model is None:
        return None
    answer = prediction(registry, text, model.name, (), defaults.TOP_K, 1, cancel)
    step = answer.steps[0] if answer.steps else None
    said = f"{piece(step.token)} with probability {fmt(step.probability)}" if step else "nothing"
    return RecapRow(chapter=10, text=f"{model.name}'s first piece is {said}; greedy writes "
                                     f"“{answer.translation}”.")


def answer(registry: ModelRegistry, body: TextRequest, cancel: Cancel = None) -> Recap:
    return recap(registry, body.text, cancel)


PAGE = PageRequest("/api/recap", TextRequest, answer, lambda v: [{"text": v.text}])
