"""The recurrent models' decoding step recorded as a graph (models/serving/recurrent.py): the same
calls on the same tensors in the same order as `Seq2Seq.decode`, so every logit, map and state the
same, bit for bit; taken only on the path it recorded."""

import copy
from pathlib import Path

import pytest
import torch

from models import checkpoint
from models.architectures import build
from models.decoding import greedy
from models.seq2seq import Seq2Seq
from models.serving import served, step_of
from models.serving.recurrent import RecurrentStepGraph, ServedSeq2Seq
from tests.models.serving.test_graph import _assert_same, _counted, assert_searches_match
from tests.models.serving.test_precision import _fp16_numbers
from tests.tiny import tiny_config

VOCAB = 300
RECURRENT = ["rnn", "lstm", "lstm-additive", "lstm-dot"]
CHECKPOINTS = Path(__file__).resolve().parents[3] / "checkpoints"
SOURCES = [[5, 9, 12, 7, 20], [40, 41, 42], [7] * 23, [250, 3, 99, 120]]


def _pair(name: str, precision: str = "fp16-weights", seed: int = 0):
    """The same tiny model served twice: decoding through its recorded step, and in Python."""
    torch.manual_seed(seed)
    model = _fp16_numbers(build(tiny_config(name, VOCAB))).eval().requires_grad_(False)
    graph = served(copy.deepcopy(model), "input-major", precision, "graph")
    python = served(model, "input-major", precision, "python")
    assert (step_of(graph), step_of(python)) == ("graph", "python")
    return graph, python


def _calls(model) -> list[int]:
    """Count the recorded step's runs, to show that a decode went through it."""
    return _counted(model.graph, ("run",))


@pytest.mark.parametrize("precision", ["fp16-weights", "fp32"])
@pytest.mark.parametrize("name", RECURRENT)
@torch.inference_mode()
def test_greedy_and_beam_search_through_the_graph_match_the_python_step_bit_for_bit(name, precision):
    """Source lengths far from the two-piece example it was recorded on, one sentence and a beam of
    four rows (a batch the recording never saw)."""
    graph, python = _pair(name, precision)
    count = _calls(graph)
    assert_searches_match(graph, python, SOURCES)
    assert count[0] > 30 * len(SOURCES)


@pytest.mark.parametrize("name", RECURRENT)
@torch.inference_mode()
def test_each_step_returns_the_same_logits_maps_and_state(name):
    graph, python = _pair(name)
    src = torch.tensor([[5, 9, 12, 7, 20, 4]])
    memories = graph.encode(src), python.encode(src)
    caches = [None, None]
    for token in [1, 8, 30, 2, 2, 17, 9, 60]:
        (la, wa, ca), (lb, wb, cb) = (m.decode(mem, torch.tensor([[token]]), cache)
                                      for m, mem, cache in zip((graph, python), memories, caches, strict=True))
        assert torch.equal(la, lb) and wa.keys() == wb.keys()
        assert all(torch.equal(wa[k], wb[k]) for k in wa)
        states = (ca, cb) if name == "rnn" else (torch.cat(ca), torch.cat(cb))
        assert type(ca) is type(cb) and torch.equal(*states)
        caches = [ca, cb]
    assert la.shape == (1, 1, VOCAB)
    if graph.attention is not None:
        assert wa["cross"].shape == (1, 1, 1, 1, 6)


@pytest.mark.parametrize("name", RECURRENT)
def test_the_shipped_model_translates_the_same_through_its_graph(name):
    model, python = (served(checkpoint.load(CHECKPOINTS / name).requires_grad_(False), "input-major",
                            "fp16-weights", step) for step in ("graph", "python"))
    count = _calls(model)
    with torch.inference_mode():
        for src in ([112, 2040, 77, 981, 5, 14], [300, 301, 17, 45, 2000, 999, 12, 8, 1500, 14]):
            _assert_same(greedy(model, src), greedy(python, src))
    assert count[0] > 0


@pytest.mark.parametrize("name", RECURRENT)
@torch.inference_mode()
def test_padded_sources_step_through_the_masked_recording_bit_for_bit(name):
    """Sentences of several lengths decoded together (models/serving/batch.py): a model with attention
    replays its masked recording, one without replays its step (a mask changes nothing it reads)."""
    graph, python = _pair(name)
    count = _counted(graph.graph, ("run", "masked") if graph.attention is not None else ("run",))
    src = torch.tensor([[5, 9, 12, 7], [40, 41, 0, 0]])  # padding: a mask
    memories = graph.encode(src), python.encode(src)
    caches = [None, None]
    for token in [1, 8, 30]:
        tgt = torch.tensor([[token], [token]])
        (la, wa, ca), (lb, wb, cb) = (m.decode(mem, tgt, cache)
                                      for m, mem, cache in zip((graph, python), memories, caches, strict=True))
        assert torch.equal(la, lb) and wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
        caches = [ca, cb]
    if graph.attention is not None:
        assert count == [0, 3] and float(wa["cross"][1, ..., 2:].abs().max()) == 0.0  # padding: weight 0
    else:
        assert count == [3]


def test_with_gradients_on_or_in_training_the_step_runs_in_python():
    graph, python = _pair("lstm-dot")
    count = _calls(graph)
    grads = []
    for model in (graph, python):
        model.requires_grad_(True)
        memory = model.encode(torch.tensor([[5, 9, 12]]))
        _, _, cache = model.decode(memory, torch.tensor([[1]]))
        logits, _, _ = model.decode(memory, torch.tensor([[4]]), cache)
        logits.logsumexp(-1).sum().backward()
        grads.append([p.grad for p in model.parameters()])
    assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(*grads, strict=True))
    with torch.no_grad():
        graph.train()
        graph.decode(graph.encode(torch.tensor([[5, 9, 12]])), torch.tensor([[1]]))
    assert count == [0]


@pytest.mark.parametrize("name", RECURRENT)
def test_a_served_recurrent_model_is_the_trained_one_with_the_same_parameters(name):
    torch.manual_seed(1)
    model = build(tiny_config(name, VOCAB)).eval().requires_grad_(False)
    params = dict(model.named_parameters())
    keys = model.state_dict().keys()
    graph = served(model, "input-major", "fp16-weights", "graph")
    assert isinstance(graph, ServedSeq2Seq) and isinstance(graph, Seq2Seq) and not graph.training
    assert isinstance(graph.graph, RecurrentStepGraph)
    assert graph.state_dict().keys() == keys and graph.config is model.config
    assert all(p is params[k] for k, p in graph.named_parameters())
    assert (graph.attention is None) == (name in ("rnn", "lstm"))
    assert not hasattr(model, "graph")  # the trained model itself is not a served one


@pytest.mark.parametrize("name", RECURRENT)
@torch.inference_mode()
def test_the_encoder_through_its_recorded_step_matches_the_derivation_bit_for_bit(name):
    graph, python = _pair(name)
    count = _counted(graph.encoder_graph, ("run",))
    for ids in SOURCES:
        src = torch.tensor([ids])
        (memory_a, internals_a), (memory_b, internals_b) = graph.encode_with_internals(src), \
            python.encode_with_internals(src)
        assert torch.equal(memory_a.keys, memory_b.keys) and memory_a.mask is memory_b.mask is None
        states = (memory_a.state, memory_b.state) if name == "rnn" else \
            (torch.cat(memory_a.state), torch.cat(memory_b.state))
        assert torch.equal(*states)
        assert (memory_a.projected is None) == (memory_b.projected is None)
        if memory_a.projected is not None:
            assert torch.equal(memory_a.projected, memory_b.projected)
        for key in ("encoder_hidden", "encoder_gates"):
            a, b = internals_a[key], internals_b[key]
            assert (a is None and b is None) or torch.equal(a, b)
    assert count == [sum(len(ids) for ids in SOURCES)]
    padded = torch.tensor([[5, 9, 12], [40, 0, 0]])  # padding: the derivation's encoder
    graph.encode_with_internals(padded)
    assert count == [sum(len(ids) for ids in SOURCES)]


@pytest.mark.parametrize("name", RECURRENT)
@torch.inference_mode()
def test_a_sentence_typed_on_resumes_after_its_prefix_and_matches_the_derivation_bit_for_bit(name):
    """Each key sends the sentence again: the encoder steps only the pieces after the longest prefix
    read lately (an edit in the middle resumes before it), and every state and gate is still the
    derivation's."""
    graph, python = _pair(name)
    count = _counted(graph.encoder_graph, ("run",))
    typed = [[5], [5, 9], [5, 9, 12], [5, 9, 12, 7], [5, 10, 12, 7], [5, 10, 12, 7, 20]]
    for ids in typed:
        src = torch.tensor([ids])
        (memory_a, internals_a), (memory_b, internals_b) = graph.encode_with_internals(src), \
            python.encode_with_internals(src)
        assert torch.equal(memory_a.keys, memory_b.keys)
        for key in ("encoder_hidden", "encoder_gates"):
            a, b = internals_a[key], internals_b[key]
            assert (a is None and b is None) or torch.equal(a, b)
    # stepped: 1 + 1 + 1 + 1, then from the edited second piece 3, then 1
    assert count == [8]


@torch.inference_mode()
def test_the_prefixes_kept_are_bounded():
    from models.serving.recurrent import PREFIXES_KEPT

    graph, _ = _pair("lstm")
    for i in range(PREFIXES_KEPT // 4 + 10):
        graph.encode_with_internals(torch.tensor([[5 + i % 200, 9, 12, 7 + i // 200]]))
    assert len(graph.encoder_graph._recent) == PREFIXES_KEPT
