"""POST /api/order as a function: the order chapter's probe (models/probes/order.py). The typed words
shuffled (seeded) or a given permutation of the pieces; the encoder's self-attention of both
sentences with positional encoding off and on, how far the shuffled maps are from the original's
permuted, the four translations, and the sinusoidal table with its dot-product similarity."""

from __future__ import annotations

import threading
from dataclasses import replace

from app.runtime.errors import InvalidOptionError
from app.runtime.registry import ModelRegistry
from app.runtime.text import Source
from app.schemas.order import Order, OrderCheck, OrderRequest, PositionalTable
from app.services.inference import SWITCHED, DecodeOptions, decode_tokens, pick_model, stop_when, with_switches
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from models.probes.order import check_permutation, order_check, positions, shuffle_words

DEFINITION = ("shuffled[i] = original[permutation[i]]; max_abs_difference = max over layers, heads, i, j of "
              "|A_shuffled[i, j] - A_original[permutation[i], permutation[j]]|, A the encoder's "
              "self-attention weights: float rounding level when the encoder cannot see order")


def order(registry: ModelRegistry, text: str, name: str | None = None, permutation: list[int] | None = None,
          seed: int = 0, layer: int = 0, max_position: int | None = None,
          cancel: threading.Event | None = None) -> Order:
    source = registry.source(text)
    entry = pick_model(registry, name, with_switches, SWITCHED)
    if permutation is None:
        permutation = shuffle_words(source.pieces, seed)
    try:
        check_permutation(permutation, len(source.ids))
    except ValueError as error:
        raise InvalidOptionError("permutation", str(error)) from error
    layers, d_model = entry.capabilities.layers, entry.model.config.d_model
    if not 0 <= layer < layers:
        raise InvalidOptionError("layer", f"layer must be 0 to {layers - 1}, got {layer}")
    shown = max_position or len(source.ids)
    limit, stop = registry.limits.max_target_tokens, stop_when(cancel)
    shuffled = [source.ids[i] for i in permutation]
    tokenizer = registry.tokenizer

    def compute() -> Order:
        checks, translations = {}, {}
        for label, pe in (("pe_off", False), ("pe_on", True)):
            check = order_check(entry.model, source.ids, permutation, pe)
            checks[label] = OrderCheck(
                positional=pe, max_abs_difference=float(f"{check.max_abs_difference:.3e}"),
                per_layer=[float(f"{d:.3e}") for d in check.difference.tolist()],
                original=round_sig(check.original[layer]), shuffled=round_sig(check.shuffled[layer]))
            translations[label] = {
                which: tokenizer.decode(decode_tokens(entry, _ids(source, ids), DecodeOptions(positional=pe),
                                                      limit, stop)[0])
                for which, ids in (("original", source.ids), ("shuffled", shuffled))}
        table = positions(shown, d_model)
        return Order(model=entry.name, source_tokens=source.pieces, shuffled_tokens=tokenizer.pieces(shuffled),
                     shuffled_text=tokenizer.decode(shuffled), permutation=permutation, definition=DEFINITION,
                     layer=layer, maps_shown="every head of `layer`", checks=checks, translations=translations,
                     positional_encoding=PositionalTable(positions=shown, dimensions=d_model,
                                                         table=round_sig(table.table),
                                                         similarity=round_sig(table.similarity)))

    key = ("order", entry.name, source.text, tuple(permutation), layer, shown)
    return registry.jobs.result(key, compute, cancel)


def _ids(source: Source, ids: list[int]) -> Source:
    """The source with other piece ids (the shuffle): decoding reads only `ids`."""
    return replace(source, ids=ids, pieces=[])


def answer(registry: ModelRegistry, body: OrderRequest, cancel: Cancel = None) -> Order:
    return order(registry, body.text, body.model, body.permutation, body.seed, body.layer, body.max_position,
                 cancel)


PAGE = PageRequest("/api/order", OrderRequest, answer, lambda v: [{"text": v.text, "seed": v.seed}])
