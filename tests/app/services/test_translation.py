"""The translation service: greedy, beam, top-k and the Transformer's switches, without HTTP."""

from __future__ import annotations

import pytest

from app.runtime.errors import InvalidOptionError
from app.services.inference import DecodeOptions
from app.services.maps import attention_maps
from app.services.translation import translation
from tests.app.answers import sent
from tests.app.conftest import TEXT


def test_chapter_experiments_are_one_call_each(registry):
    """The order, heads and prediction chapters' requests as the services serve them: PE off, a head
    off, top-k, beam."""
    text = "Le chat dort sur la table."
    no_pe = sent(attention_maps(registry, "transformer", text, DecodeOptions(positional=False),
                                kinds=("encoder",)))
    assert {m["kind"] for m in no_pe["maps"]} == {"encoder"}
    head_off = sent(translation(registry, "transformer", text, DecodeOptions(heads_off=(("cross", 0, 1),))))
    assert head_off["model"] == "transformer"
    steps = sent(translation(registry, "transformer", text, DecodeOptions(top_k=5)))["steps"]
    assert all(len(s["top"]) == 5 for s in steps)
    beam = sent(translation(registry, "lstm-dot", text, DecodeOptions(beam_size=4)))
    assert 1 <= len(beam["candidates"]) <= 4
    with pytest.raises(InvalidOptionError):
        sent(translation(registry, "lstm-dot", text, DecodeOptions(heads_off=(("cross", 0, 0),))))


def test_a_cache_hit_equals_a_fresh_answer(cached_registry, registry):
    first = translation(cached_registry, "lstm", "  Je   mange du pain. ")
    again = translation(cached_registry, "lstm", TEXT)  # same normalised text: a hit
    assert again is first and len(cached_registry.jobs.cache) == 1
    assert translation(registry, "lstm", TEXT) == first


def test_a_sublayer_switch_translates_as_the_model_decodes_with_it(registry, client):
    """`sublayers_off` reaches the model: the answer is the greedy search of the Transformer with
    that switch (models.decoding), and a model without switches, or an unknown switch, is a 422."""
    from models.decoding import greedy_tokens

    entry = registry.get("transformer")
    for off in ("feed_forward", "residual_attention", "residual_feed_forward"):
        answer = sent(translation(registry, "transformer", TEXT, DecodeOptions(sublayers_off=(off,))))
        tokens, _ = greedy_tokens(entry.model, registry.source(TEXT).ids, len(answer["target_tokens"]) + 1,
                                  off=(off,))
        assert answer["target_tokens"] == registry.tokenizer.pieces(tokens)[: len(answer["target_tokens"])]
    with pytest.raises(InvalidOptionError) as error:
        sent(translation(registry, "lstm", TEXT, DecodeOptions(sublayers_off=("feed_forward",))))
    assert error.value.field == "sublayers_off"
    ok = client.post("/api/translate", json={"text": TEXT, "sublayers_off": ["feed_forward"]})
    assert ok.status_code == 200
    for body in ({"sublayers_off": ["ffn"]}, {"sublayers_off": ["feed_forward", "feed_forward"]},
                 {"model": "lstm", "sublayers_off": ["feed_forward"]}):
        assert client.post("/api/translate", json={"text": TEXT, **body}).status_code == 422, body
