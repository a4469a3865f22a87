"""One sentence's greedy search through the recorded step (models/serving/search.py): the same
pieces as models.decoding's search, with fewer calls between steps; anything else is decoding's."""

from pathlib import Path

import pytest
import torch

from models import checkpoint, decoding
from models.decoding import Stopped
from models.serving import search, served
from models.tokenizer import BPETokenizer

ROOT = Path(__file__).resolve().parents[3] / "checkpoints"
SENTENCES = ["Je mange du pain.", "Où est la gare ?",
             "Il pleut depuis ce matin, alors nous restons à la maison.",
             "Le chat noir dort sur le lit de ma sœur pendant que nous préparons le dîner pour nos amis.",
             "Nous avons un chat et un chat.", "Tom ne sait pas nager."]


@pytest.fixture(scope="module")
def shipped():
    tokenizer = BPETokenizer.load(ROOT / "tokenizer.json")
    model = served(checkpoint.load(ROOT / "transformer").requires_grad_(False), "input-major", "fp16-weights",
                   "graph")
    return model, [tokenizer.encode(s) for s in SENTENCES]


def _counted(model, monkeypatch) -> dict[str, int]:
    """How often the search reached the model's general decode and its recorded graph."""
    calls = {"decode": 0, "graph": 0}
    decode, graph = model.decode, model.graph

    def counted_decode(*args, **kwargs):
        calls["decode"] += 1
        return decode(*args, **kwargs)

    class CountedGraph:
        def __call__(self, *args):
            calls["graph"] += 1
            return graph(*args)

    monkeypatch.setattr(model, "decode", counted_decode)
    monkeypatch.setattr(model, "graph", CountedGraph())
    return calls


@torch.inference_mode()
def test_the_same_pieces_as_decoding_s_search_through_the_graph_alone(shipped, monkeypatch):
    model, sources = shipped
    expected = [decoding.greedy_tokens(model, src) for src in sources]
    expected_cut = [decoding.greedy_tokens(model, src, max_len=3) for src in sources]
    calls = _counted(model, monkeypatch)
    assert [search.greedy_tokens(model, src) for src in sources] == expected
    assert [search.greedy_tokens(model, src, max_len=3) for src in sources] == expected_cut  # cut: not finished
    assert not any(finished for _, finished in expected_cut)
    assert calls["decode"] == 0 and calls["graph"] > len(sources)


@torch.inference_mode()
def test_a_stop_between_steps_raises_stopped(shipped):
    model, sources = shipped
    asked = []
    with pytest.raises(Stopped):
        search.greedy_tokens(model, sources[2], stop=lambda: asked.append(1) or len(asked) > 2)
    assert len(asked) == 3


@torch.inference_mode()
def test_options_and_other_models_are_decoding_s_own_search(shipped, monkeypatch):
    model, sources = shipped
    expected = decoding.greedy_tokens(model, sources[1], positional=False)
    calls = _counted(model, monkeypatch)
    assert search.greedy_tokens(model, sources[1], positional=False) == expected
    assert calls["decode"] > 0  # options: through the general decode
    calls["decode"] = 0
    longer = model.pe.size(0) + 5  # positions past the table, which the graph does not read
    expected = decoding.greedy_tokens(model, sources[1], longer)
    assert search.greedy_tokens(model, sources[1], max_len=longer) == expected
    assert calls["decode"] > 0
    calls["decode"] = 0
    rows = model.pe.size(0)  # with its internals the search reads one position more: rows + 1 > rows
    expected_long = decoding.greedy(model, sources[1], rows)
    _assert_same_decoded(search.greedy(model, sources[1], max_len=rows), expected_long)
    assert calls["decode"] > 0


@pytest.mark.parametrize("name", ["rnn", "lstm", "lstm-additive", "lstm-dot"])
@torch.inference_mode()
def test_recurrent_models_give_decoding_s_pieces_through_their_graph_alone(shipped, name, monkeypatch):
    _, sources = shipped
    model, python = (served(checkpoint.load(ROOT / name).requires_grad_(False), "input-major", "fp16-weights",
                            step) for step in ("graph", "python"))
    expected = [decoding.greedy_tokens(model, src) for src in sources]
    assert [search.greedy_tokens(python, src) for src in sources] == expected  # no graph: decoding's
    expected_cut = [decoding.greedy_tokens(model, src, max_len=3) for src in sources]
    calls = _counted(model, monkeypatch)
    assert [search.greedy_tokens(model, src) for src in sources] == expected
    assert [search.greedy_tokens(model, src, max_len=3) for src in sources] == expected_cut
    assert calls["decode"] == 0 and calls["graph"] > len(sources)


def test_with_gradients_on_it_is_decoding_s_search(shipped):
    model, sources = shipped
    with torch.no_grad():
        expected = decoding.greedy_tokens(model, sources[0])
    with torch.enable_grad():
        assert search.greedy_tokens(model, sources[0]) == expected


def _assert_same_decoded(a: decoding.Decoded, b: decoding.Decoded):
    assert (a.tokens, a.finished, a.top_k) == (b.tokens, b.finished, b.top_k)
    assert torch.equal(a.output.logits, b.output.logits)
    assert a.output.attentions.keys() == b.output.attentions.keys()
    assert all(torch.equal(a.output.attentions[k], b.output.attentions[k]) for k in a.output.attentions)
    for field in ("encoder_hidden", "encoder_gates"):
        x, y = getattr(a.output, field), getattr(b.output, field)
        assert (x is None and y is None) or torch.equal(x, y)


@pytest.mark.parametrize("name", ["transformer", "rnn", "lstm-additive"])
@torch.inference_mode()
def test_greedy_with_its_internals_gives_decoding_s_through_the_graph_alone(shipped, name, monkeypatch):
    """Every logit, map, encoder state and top-k the same, bit for bit, finished or cut by max_len;
    a prefix is decoding's own search."""
    _, sources = shipped
    model = served(checkpoint.load(ROOT / name).requires_grad_(False), "input-major", "fp16-weights", "graph")
    expected = [decoding.greedy(model, src, top_k=3) for src in sources]
    cut = [decoding.greedy(model, src, max_len=2, top_k=0) for src in sources]
    with_prefix = decoding.greedy(model, sources[0], prefix=expected[0].tokens[:2])
    calls = _counted(model, monkeypatch)
    for src, want, want_cut in zip(sources, expected, cut, strict=True):
        _assert_same_decoded(search.greedy(model, src, top_k=3), want)
        _assert_same_decoded(search.greedy(model, src, max_len=2, top_k=0), want_cut)
    assert calls["decode"] == 0 and calls["graph"] > len(sources)
    assert any(not d.finished for d in cut) and any(d.finished for d in expected)
    _assert_same_decoded(search.greedy(model, sources[0], prefix=expected[0].tokens[:2]), with_prefix)
    assert calls["decode"] > 0
