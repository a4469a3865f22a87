"""POST /api/scaling as a function: the scaling chapter's probe (models/probes/scaling.py). Softmax
saturation against d_k on sampled vectors, with and without the 1/sqrt(d_k) scale, and the spread
of the Transformer's own scores on the typed sentence, per kind, layer and head."""

from __future__ import annotations

import functools
import threading
from dataclasses import asdict

from app.runtime.registry import ModelRegistry
from app.schemas.scaling import HeadSpread, SampledCurves, SaturationPoint, Scaling, ScalingRequest
from app.services.inference import GREEDY, SWITCHED, decode_tokens, pick_model, stop_when, with_switches
from app.services.page import Cancel, PageRequest
from app.services.rounding import round_sig
from app.services.translation import translation_fields
from models.probes.scaling import DISTRIBUTION, model_scores, saturation

D_KS = (4, 8, 16, 32, 64, 128, 256, 512, 1024)  # log-spaced: powers of two
KEYS, DRAWS, SEED = 16, 512, 0
DEFINITION = ("scores s_j = q . k_j (unscaled) or q . k_j / sqrt(d_k) (scaled); p = softmax(s); per query "
              "row: max_weight = max_j p_j, entropy = -sum_j p_j ln p_j (nats), gradient = "
              "||diag(p) - p p^T||_F, the Frobenius norm of the softmax's Jacobian d p / d s (how much "
              "gradient passes through it); each averaged over rows. score_std: population standard "
              "deviation of the scores over every (query, key) pair a query may see")


def scaling(registry: ModelRegistry, text: str, name: str | None = None, d_ks: tuple[int, ...] | None = None,
            keys: int = KEYS, cancel: threading.Event | None = None) -> Scaling:
    source = registry.source(text)
    entry = pick_model(registry, name, with_switches, SWITCHED)
    d_ks = tuple(sorted(set(d_ks))) if d_ks else D_KS
    limit, stop = registry.limits.max_target_tokens, stop_when(cancel)

    def compute() -> Scaling:
        tokens, finished = decode_tokens(entry, source, GREEDY, limit, stop)
        heads, _ = model_scores(entry.model, source.ids, tokens)
        d_k = heads[0].d_k
        sampled = sampled_saturation(tuple(sorted({*d_ks, d_k})), keys)
        curve = {variant: [_rounded(row) for row in sampled if row.scaled == scaled and row.d_k in d_ks]
                 for variant, scaled in (("unscaled", False), ("scaled", True))}
        at_model = {("scaled" if row.scaled else "unscaled"): _rounded(row) for row in sampled
                    if row.d_k == d_k}
        per_head = [HeadSpread(**{key: (round_sig(value) if isinstance(value, float) else value)
                                  for key, value in asdict(h).items()}) for h in heads]
        sampled = SampledCurves(distribution=DISTRIBUTION, keys=keys, draws=DRAWS, seed=SEED, d_k=list(d_ks),
                                **curve, at_model_d_k=at_model)
        return Scaling(**translation_fields(entry.name, registry.tokenizer, source, tokens, finished),
                       d_k=d_k, definition=DEFINITION, sampled=sampled, heads=per_head,
                       summary=_summary(per_head))

    return registry.jobs.result(("scaling", entry.name, source.text, d_ks, keys), compute, cancel)


@functools.lru_cache(maxsize=16)
def sampled_saturation(d_ks: tuple[int, ...], keys: int) -> tuple:
    """models.probes.scaling.saturation at these d_k, computed once: it samples random vectors, not
    the sentence, and was most of a request's time (0.55 of 0.9 s). The rows are shared between
    requests, so they are only read (into SaturationPoint)."""
    return tuple(saturation(list(d_ks), keys, DRAWS, SEED))


def _rounded(row) -> SaturationPoint:
    return SaturationPoint(d_k=row.d_k, **{key: round_sig(getattr(row, key))
                                           for key in ("score_std", "max_weight", "entropy", "gradient")})


def _summary(per_head: list[HeadSpread]) -> dict[str, dict[str, float]]:
    """Per kind, the mean over layers and heads of each head figure (one point per kind on a chart)."""
    out = {}
    figures = [key for key in HeadSpread.model_fields if key not in ("kind", "layer", "head", "d_k")]
    for kind in ("encoder", "decoder", "cross"):
        rows = [h for h in per_head if h.kind == kind]
        if rows:
            out[kind] = {key: round_sig(sum(getattr(h, key) for h in rows) / len(rows)) for key in figures}
    return out


def answer(registry: ModelRegistry, body: ScalingRequest, cancel: Cancel = None) -> Scaling:
    return scaling(registry, body.text, body.model, tuple(body.d_k) if body.d_k else None, body.keys, cancel)


PAGE = PageRequest("/api/scaling", ScalingRequest, answer, lambda v: [{"text": v.text}])
