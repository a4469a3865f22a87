"""POST /api/recap as a function: the recap's rows that depend on the reader's sentence, each one
number measured on it, gathered in one request so the recap is complete before any chapter is
opened. The rows come in the chapters' order (app/chapters.py): each part of a chapter's row that
has a measurement here (`MEASURES`, by slug and part) is measured; the others need no sentence
(the training, bottleneck, heads and room chapters' rows) and the page writes them from the
catalogue.

Each number comes from the same service call its chapter's request makes, with the same
arguments, so the recap and the chapter share cache entries and never disagree. The cheap form is
chosen where a chapter's default is heavy: the gradients chapter's gradient at the sentence's own
length instead of its repeats to 80 pieces, the parallel chapter's step counts instead of a timing
(which only the reader starts).

A row is a catalogue message ("<slug>.recap.said") and its values, phrased in every language of
the page (app/services/language.py): the page shows the reader's, and keeps it when the reader
switches language; `text` is the English one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from app import chapters, defaults
from app.runtime.errors import InvalidOptionError, UnknownModelError
from app.runtime.registry import LoadedModel, ModelRegistry
from app.schemas.base import TextRequest
from app.schemas.recap import Recap, RecapRow
from app.services.gradients import gradient_curves
from app.services.language import LANGUAGES, Words
from app.services.lookup import lookup
from app.services.next_token import next_token
from app.services.order import order as shuffled
from app.services.page import Cancel, PageRequest
from app.services.predict import prediction
from app.services.recurrence import recurrence as read_sentence
from app.services.scaling import scaling as saturation
from app.services.scores import attention_scores

log = logging.getLogger("attention_lab")


class Piece(str):
    """A BPE piece, shown as a reader sees it (the word-start marker dropped) and quoted."""


@dataclass(frozen=True)
class Said:
    """A sentence as data: its catalogue key and its values (a float: a measured number; a Piece; a
    list of Said: a list in the language's words; anything else as it is)."""
    key: str
    values: dict = field(default_factory=dict)


def phrase(words: Words, said: Said) -> str:
    def value(v):
        if isinstance(v, Piece):
            return words.text("quote", text="␣" if v == "▁" else v.removeprefix("▁"))
        if v is None or isinstance(v, float):
            return words.figure(v)  # None: the measurement is missing, "–"
        if isinstance(v, list):
            return words.list([phrase(words, item) for item in v])
        return v
    return words.text(said.key, **{name: value(v) for name, v in said.values.items()})


def row(chapter: str, part: str, said: Said) -> RecapRow:
    return RecapRow(chapter=chapter, part=part or None, text=phrase(Words("en"), said),
                    said={lang: phrase(Words(lang), said) for lang in LANGUAGES})


def first(registry: ModelRegistry, test) -> LoadedModel | None:
    return next((m for m in registry.models.values() if test(m.capabilities)), None)


def recap(registry: ModelRegistry, text: str, cancel: threading.Event | None = None) -> Recap:
    """The rows for `text`, in the chapters' order; a chapter that cannot answer (its model is not
    loaded) has no row. `cancel` set (the client hung up): the work not started is skipped."""
    registry.source(text)  # an invalid text is refused here (422), before any work
    rows = []
    for chapter in chapters.CHAPTERS:
        for part in chapter.recap:
            measure = MEASURES.get((chapter.slug, part))
            if measure is None:
                continue
            try:
                said = measure(registry, text, cancel)
            except (UnknownModelError, InvalidOptionError) as error:
                log.warning("recap: %s gave no row: %s", measure.__name__, error)
                continue
            if said is not None:
                rows.append(row(chapter.slug, part, said))
    return Recap(rows=rows)


def recurrence(registry: ModelRegistry, text: str, cancel) -> Said | None:
    if first(registry, lambda c: c.recurrent and c.attention is None and not c.gates) is None:
        return None
    answer = read_sentence(registry, text, None, cancel)
    most = max(range(len(answer.change)), key=answer.change.__getitem__)
    return Said("recurrence.recap.said", {"model": answer.model, "piece": Piece(answer.tokens[most]),
                                          "change": float(answer.change[most])})


def gradients(registry: ModelRegistry, text: str, cancel) -> Said | None:
    if first(registry, lambda c: c.recurrent and c.attention is None) is None:
        return None
    answer = gradient_curves(registry, text, None, (), cancel)
    back = len(answer.tokens) - 1
    each = [Said("gradients.recap.said.each", {"model": c.model,
                                               "multiple": c.norm[back] / c.norm[0] if c.norm[0] > 0 else None})
            for c in answer.curves]
    return Said("gradients.recap.said", {"count": back, "each": each})


def scores(registry: ModelRegistry, text: str, cancel) -> Said | None:
    model = first(registry, lambda c: c.recurrent and c.cross_attention)
    if model is None:
        return None
    answer = attention_scores(registry, text, model.name, 0, 1.0, cancel)
    onto = max(range(len(answer.weights)), key=answer.weights.__getitem__)
    return Said("attention.recap.said", {"model": model.name, "piece": Piece(answer.query_token),
                                         "weight": float(answer.max_weight),
                                         "onto": Piece(answer.source_tokens[onto])})


def one_line(registry: ModelRegistry, text: str, cancel) -> Said | None:
    """The attention chapter's one line, as the chapter first asks it (head 1): its strongest weight
    and how close the recomputed mix of values is to the head's own output."""
    if first(registry, lambda c: c.switches) is None:
        return None
    answer = lookup(registry, text, None, 0, cancel)
    query, key = max(((i, j) for i, weights in enumerate(answer.weights) for j in range(len(weights))),
                     key=lambda at: answer.weights[at[0]][at[1]])
    return Said("attention.recap.said.lookup", {
        "head": str(answer.head + 1), "model": answer.model, "piece": Piece(answer.source_tokens[query]),
        "weight": float(answer.weights[query][key]), "onto": Piece(answer.source_tokens[key]),
        "difference": float(answer.max_abs_difference), "scale": float(answer.output_scale)})


def steps(registry: ModelRegistry, text: str, cancel) -> Said | None:
    recurrent = first(registry, lambda c: c.architecture == "lstm") or first(registry, lambda c: c.recurrent)
    parallel = first(registry, lambda c: not c.recurrent)
    if recurrent is None or parallel is None:
        return None
    pieces = len(registry.source(text).ids)
    layers = parallel.capabilities.layers
    return Said("parallel.recap.said", {"count": pieces, "recurrent": recurrent.name,
                                        "parallel": parallel.name, "layers": layers})


def scaling(registry: ModelRegistry, text: str, cancel) -> Said | None:
    if first(registry, lambda c: c.switches) is None:
        return None
    answer = saturation(registry, text, cancel=cancel)
    at = answer.sampled.at_model_d_k
    return Said("scaling.recap.said", {"model": answer.model, "dk": str(answer.d_k),
                                       "unscaled": float(at["unscaled"].max_weight),
                                       "scaled": float(at["scaled"].max_weight)})


def order(registry: ModelRegistry, text: str, cancel) -> Said | None:
    if first(registry, lambda c: c.switches) is None:
        return None
    checks = shuffled(registry, text, seed=defaults.SEED, cancel=cancel).checks
    return Said("order.recap.said", {"off": float(checks["pe_off"].max_abs_difference),
                                     "on": float(checks["pe_on"].max_abs_difference)})


def predict(registry: ModelRegistry, text: str, cancel) -> Said | None:
    model = first(registry, lambda c: "encoder" in c.attention_kinds)
    if model is None:
        return None
    answer = prediction(registry, text, model.name, (), defaults.TOP_K, 1, cancel)
    step = answer.steps[0] if answer.steps else None
    if step is None:
        return Said("prediction.recap.said.nothing", {"model": model.name, "translation": answer.translation})
    return Said("prediction.recap.said", {"model": model.name, "piece": Piece(step.token),
                                          "probability": float(step.probability),
                                          "translation": answer.translation})


def labels(registry: ModelRegistry, text: str, cancel) -> Said | None:
    """The free labels: one per position of the model's own translation, all scored in one pass."""
    model = first(registry, lambda c: "encoder" in c.attention_kinds)
    if model is None:
        return None
    answer = next_token(registry, text, model.name, None, cancel)
    return Said("prediction.recap.said.labels", {"model": model.name, "count": len(answer.labels),
                                                 "mean": float(answer.mean_loss)})


# (chapter's slug, part of its row) -> what measures it on the sentence
MEASURES = {("recurrence", ""): recurrence, ("gradients", ""): gradients, ("attention", ""): scores,
            ("attention", "lookup"): one_line, ("parallel", ""): steps, ("scaling", ""): scaling,
            ("order", ""): order, ("prediction", ""): predict,
            ("prediction", "labels"): labels}


def answer(registry: ModelRegistry, body: TextRequest, cancel: Cancel = None) -> Recap:
    return recap(registry, body.text, cancel)


PAGE = PageRequest("/api/recap", TextRequest, answer, lambda v: [{"text": v.text}])
