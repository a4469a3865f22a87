"""The Transformer's decoding step recorded as a graph (models/serving/graph.py): the Python step's
calls on the same tensors in the same order, so every logit, map and cached key the same, bit for
bit; taken only on the path it recorded."""

import copy
from pathlib import Path

import pytest
import torch

from models import checkpoint
from models.architectures import MODEL_NAMES, build
from models.decoding import beam_search, greedy, greedy_tokens
from models.serving import STEPS, on_device, served, step_of
from models.serving.batch import Pool, Sentence
from models.serving.graph import StepGraph
from models.serving.step import ServedTransformer
from models.transformer import Transformer
from tests.models.serving.test_precision import _fp16_numbers
from tests.tiny import tiny_config

VOCAB = 300
SHIPPED = Path(__file__).resolve().parents[3] / "checkpoints" / "transformer"
SOURCES = [[5, 9, 12, 7, 20], [40, 41, 42], [7] * 23, [250, 3, 99, 120]]


def _pair(precision="fp16-weights", seed=0):
    """The same tiny Transformer served twice: decoding through its recorded graph, and in Python."""
    torch.manual_seed(seed)
    model = _fp16_numbers(build(tiny_config("transformer", VOCAB, layers=3))).eval().requires_grad_(False)
    graph = served(copy.deepcopy(model), "input-major", precision, "graph")
    python = served(model, "input-major", precision, "python")
    assert (step_of(graph), step_of(python)) == ("graph", "python")
    return graph, python


def _counted(recorded, names: tuple[str, ...]) -> list[int]:
    """Count the runs of each graph `names` of `recorded`, to show that work went through them."""
    count = [0] * len(names)
    for i, name in enumerate(names):
        run = getattr(recorded, name)

        def counted(*args, run=run, i=i):
            count[i] += 1
            return run(*args)
        setattr(recorded, name, counted)
    return count


def _calls(graph_model) -> list[int]:
    """The recorded step's runs: first position, later ones."""
    return _counted(graph_model.graph, ("first", "next"))


def _encodings(graph_model) -> list[int]:
    """The recorded encoder's runs: unpadded, padded."""
    return _counted(graph_model.encoder_graph, ("run", "padded"))


def _assert_same_encoding(a, b):
    (memory_a, internals_a), (memory_b, internals_b) = a, b
    assert torch.equal(memory_a.states, memory_b.states) and memory_a.head_mask is memory_b.head_mask
    assert (memory_a.mask is None) == (memory_b.mask is None)
    assert memory_a.mask is None or torch.equal(memory_a.mask, memory_b.mask)
    assert all(torch.equal(x, y) for kv_a, kv_b in zip(memory_a.cross_kv, memory_b.cross_kv, strict=True)
               for x, y in zip(kv_a, kv_b, strict=True))
    assert torch.equal(internals_a["attentions"]["encoder"], internals_b["attentions"]["encoder"])
    assert torch.equal(internals_a["encoder_hidden"], internals_b["encoder_hidden"])


def assert_searches_match(graph, python, sources, max_len=30):
    """Greedy (with every internal, and tokens only) and a beam of four rows through `graph` give
    what they give through `python`, bit for bit."""
    for src in sources:
        _assert_same(greedy(graph, src, max_len=max_len), greedy(python, src, max_len=max_len))
        assert greedy_tokens(graph, src, max_len=max_len) == greedy_tokens(python, src, max_len=max_len)
        a, b = beam_search(graph, src, 4, max_len=max_len), beam_search(python, src, 4, max_len=max_len)
        _assert_same(a, b)
        assert [(h.tokens, h.log_prob) for h in a.beam] == [(h.tokens, h.log_prob) for h in b.beam]


def _assert_same(a, b):
    assert a.tokens == b.tokens and a.finished == b.finished
    assert torch.equal(a.output.logits, b.output.logits)
    assert a.output.attentions.keys() == b.output.attentions.keys()
    for kind, weights in a.output.attentions.items():
        assert torch.equal(weights, b.output.attentions[kind]), kind


@pytest.mark.parametrize("precision", ["fp16-weights", "fp32"])
@torch.inference_mode()
def test_greedy_and_beam_search_through_the_graph_match_the_python_step_bit_for_bit(precision):
    """Past and source lengths far from the one-position example it was recorded on, one sentence
    and a beam of four rows (a batch the graph never saw)."""
    graph, python = _pair(precision)
    count = _calls(graph)
    assert_searches_match(graph, python, SOURCES)
    assert count[0] >= 3 * len(SOURCES) and count[1] > 30 * len(SOURCES)


@pytest.mark.parametrize("precision", ["fp16-weights", "fp32"])
@torch.inference_mode()
def test_the_encoder_through_its_graph_matches_the_derivation_bit_for_bit(precision):
    """Lengths and batches far from the two-piece sentence it was recorded on; switched-off heads
    of the decoder only still go through it."""
    graph, python = _pair(precision)
    count = _encodings(graph)
    for src in [*SOURCES, [9], [3 + i % (VOCAB - 3) for i in range(graph.pe.size(0))]]:
        src = torch.tensor([src])
        _assert_same_encoding(graph.encode_with_internals(src), python.encode_with_internals(src))
    batch = torch.tensor([[5, 9, 12], [40, 41, 42]])
    _assert_same_encoding(graph.encode_with_internals(batch), python.encode_with_internals(batch))
    decoder_off = graph.head_mask([("decoder", 0, 1)])
    _assert_same_encoding(graph.encode_with_internals(batch, decoder_off),
                          python.encode_with_internals(batch, decoder_off))
    longest = max(map(len, SOURCES))
    padded = torch.tensor([src + [0] * (longest - len(src)) for src in SOURCES])  # 0: PAD_ID
    for src in (padded, padded[1:2, :5], torch.tensor([[5, 9, 0], [40, 41, 42]])):
        _assert_same_encoding(graph.encode_with_internals(src), python.encode_with_internals(src))
    assert count == [len(SOURCES) + 4, 3]


def test_paths_the_encoder_graph_did_not_record_take_the_derivation():
    """A switched-off encoder head, the positional encoding switched, a source longer than the
    positional table, gradients on, training mode: the same numbers, and no recording runs."""
    graph, python = _pair()
    count = _encodings(graph)
    src, padded = torch.tensor([[5, 9, 12, 7]]), torch.tensor([[5, 9, 12, 7], [40, 41, 0, 0]])
    longer = torch.tensor([[7] * (graph.pe.size(0) + 3)])
    heads_off = graph.head_mask([("encoder", 1, 2)])
    with torch.inference_mode():
        for args in [(src, heads_off), (padded, heads_off), (src, None, False), (longer,)]:
            _assert_same_encoding(graph.encode_with_internals(*args), python.encode_with_internals(*args))
    graph.requires_grad_(True)
    python.requires_grad_(True)
    _assert_same_encoding(graph.encode_with_internals(src), python.encode_with_internals(src))
    graph.train()
    assert graph.encode_with_internals(src)[0].states.shape == (1, 4, graph.config.d_model)
    assert count == [0, 0]


@torch.inference_mode()
def test_each_step_returns_the_same_logits_maps_and_cache():
    graph, python = _pair()
    src = torch.tensor([[5, 9, 12, 7, 20, 4]])
    memories = graph.encode(src), python.encode(src)
    assert graph.graph is not None and python.graph is None
    caches = [None, None]
    for token in [1, 8, 30, 2, 2, 17, 9, 60]:
        steps = [m.decode(mem, torch.tensor([[token]]), cache)
                 for m, mem, cache in zip((graph, python), memories, caches, strict=True)]
        (la, wa, ca), (lb, wb, cb) = steps
        assert torch.equal(la, lb) and wa.keys() == wb.keys() == {"decoder", "cross"}
        assert all(torch.equal(wa[k], wb[k]) for k in wa)
        assert all(torch.equal(x, y) for kv_a, kv_b in zip(ca, cb, strict=True)
                   for x, y in zip(kv_a, kv_b, strict=True))
        caches = [ca, cb]
    assert wa["decoder"].shape == (1, 3, 4, 1, 8) and wa["cross"].shape == (1, 3, 4, 1, 6)


@torch.inference_mode()
def test_the_shipped_transformer_translates_the_same_through_its_graph():
    model, python = (served(checkpoint.load(SHIPPED).requires_grad_(False), "input-major", "fp16-weights", step)
                     for step in STEPS)
    assert (step_of(model), step_of(python)) == STEPS
    count, encodings = _calls(model), _encodings(model)
    for src in ([112, 2040, 77, 981, 5, 14], [300, 301, 17, 45, 2000, 999, 12, 8, 1500, 14]):
        _assert_same(greedy(model, src), greedy(python, src))
    assert count[1] > 0 and encodings == [2, 0] and python.encoder_graph is None


@torch.inference_mode()
def test_switched_off_heads_and_padding_take_the_python_step():
    """Paths the graph did not record: the same numbers as a model without a graph, and the graph
    never runs."""
    graph, python = _pair()
    count = _calls(graph)
    heads_off = [("decoder", 1, 2), ("cross", 0, 1)]
    a = greedy(graph, SOURCES[0], max_len=12, head_mask=graph.head_mask(heads_off))
    b = greedy(python, SOURCES[0], max_len=12, head_mask=python.head_mask(heads_off))
    _assert_same(a, b)
    src = torch.tensor([[5, 9, 12, 7], [40, 41, 0, 0]])  # padding: a mask
    memories = graph.encode(src), python.encode(src)
    tgt = torch.tensor([[1], [1]])
    (la, wa, _), (lb, wb, _) = (m.decode(mem, tgt) for m, mem in zip((graph, python), memories, strict=True))
    assert torch.equal(la, lb) and torch.equal(wa["cross"], wb["cross"])
    assert count == [0, 0]


def test_with_gradients_on_the_step_runs_in_python_and_differentiates():
    graph, python = _pair()
    count = _calls(graph)
    grads = []
    for model in (graph, python):
        model.requires_grad_(True)  # the same tensors: the graph still fits, but gradients are on
        memory = model.encode(torch.tensor([[5, 9, 12]]))
        _, _, cache = model.decode(memory, torch.tensor([[1]]))
        logits, _, _ = model.decode(memory, torch.tensor([[4]]), cache)
        logits.logsumexp(-1).sum().backward()
        grads.append([p.grad for p in model.parameters()])
    assert step_of(graph) == "graph" and count == [0, 0]
    assert sum(g is not None for g in grads[0]) > len(grads[0]) // 2
    assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(*grads, strict=True))


def test_a_served_transformer_is_the_trained_one_with_the_same_parameters():
    torch.manual_seed(1)
    model = _fp16_numbers(build(tiny_config("transformer", VOCAB))).eval().requires_grad_(False)
    params = dict(model.named_parameters())
    keys = model.state_dict().keys()
    graph = served(model, "input-major", "fp16-weights", "graph")
    assert isinstance(graph, ServedTransformer) and isinstance(graph, Transformer) and not graph.training
    assert graph.state_dict().keys() == keys and graph.config is model.config
    assert all(p is params[k] for k, p in graph.named_parameters())
    assert not hasattr(model, "graph")  # the trained model itself is not a served one


def test_a_graph_is_recorded_for_every_model_on_a_cpu_only():
    assert STEPS == ("graph", "python")
    assert [on_device("as-stored", "fp32", step, "cpu")[2] for step in STEPS] == ["graph", "python"]
    assert on_device("as-stored", "fp32", "graph", "cuda")[2] == "python"
    with pytest.raises(ValueError, match="one of graph, python"):
        on_device("as-stored", "fp32", "compiled", "cpu")
    for name in MODEL_NAMES:
        model = served(build(tiny_config(name, VOCAB)).eval(), "as-stored", "fp32", "graph")
        assert step_of(model) == "graph"
    assert isinstance(model.graph, StepGraph)
    assert served(model, "as-stored", "fp32", "python").graph is None


def test_recording_leaves_the_parameters_as_they_were():
    torch.manual_seed(1)
    model = build(tiny_config("transformer", VOCAB)).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    served(model, "as-stored", "fp32", "graph")
    assert all(p.requires_grad for p in model.parameters())  # a training model stays trainable
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert model.state_dict().keys() == before.keys()


@torch.inference_mode()
def test_positions_past_the_positional_table_take_the_python_step_with_the_same_numbers():
    """The graph reads a position's row of the table; past it the derivation computes the rows, so
    those steps run in Python: the same logits at every position, the graph for the table's rows only."""
    graph, python = _pair()
    count = _calls(graph)
    rows = graph.pe.size(0)
    memories = graph.encode(torch.tensor([SOURCES[0]])), python.encode(torch.tensor([SOURCES[0]]))
    caches = [None, None]
    for position in range(rows + 2):
        token = torch.tensor([[3 + position % (VOCAB - 3)]])
        (la, _, ca), (lb, _, cb) = (m.decode(mem, token, cache)
                                    for m, mem, cache in zip((graph, python), memories, caches, strict=True))
        assert torch.equal(la, lb), position
        caches = [ca, cb]
    assert count == [1, rows - 1]


@torch.inference_mode()
def test_sentences_at_several_positions_step_through_their_recording_bit_for_bit():
    """Sentences joining a pool mid-way (models/serving/batch.py) are at several positions with
    left-padded past keys: the recorded rows step gives what the Python step gives, bit for bit."""
    graph, python = _pair()
    count = _counted(graph.rows_graph, ("run",))
    results = []
    for model in (graph, python):
        pool, ended = Pool(model), {}
        for step in range(40):
            if step in (0, 2, 3):
                pool.join([Sentence(SOURCES[step % len(SOURCES)], 12, handle=step)])
            ended.update((row.sentence.handle, row.result) for row in pool.step())
        results.append(ended)
    assert count[0] > 0 and results[0].keys() == results[1].keys() == {0, 2, 3}
    for handle in results[0]:
        _assert_same(results[0][handle], results[1][handle])
