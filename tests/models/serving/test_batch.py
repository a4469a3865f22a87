"""Several sentences' greedy searches at once (models/serving/batch.py): per sentence what its own
search gives, the same pieces and its maps within float rounding, the padding never seen."""

from pathlib import Path

import pytest
import torch

from models import checkpoint
from models.decoding import Stopped, max_target_len
from models.serving import search, served
from models.serving.batch import Pool, Sentence, greedy_many
from models.tokenizer import BPETokenizer

ROOT = Path(__file__).resolve().parents[3] / "checkpoints"
SENTENCES = ["Je mange du pain.", "Où est la gare ?",
             "Il pleut depuis ce matin, alors nous restons à la maison.", "Le chat",
             "Nous avons un chat et un chat.", "Tom ne sait pas nager."]


@pytest.fixture(scope="module")
def sources():
    tokenizer = BPETokenizer.load(ROOT / "tokenizer.json")
    return [tokenizer.encode(s) for s in SENTENCES]


def _served(name: str):
    return served(checkpoint.load(ROOT / name).requires_grad_(False), "input-major", "fp16-weights", "graph")


@pytest.mark.parametrize("name", ["lstm-additive", "transformer"])
@torch.inference_mode()
def test_each_sentence_as_its_own_search_with_every_map(name, sources):
    model = _served(name)
    limits = [max_target_len(model, len(ids)) for ids in sources]
    together = greedy_many(model, sources, limits, [None] * len(sources))
    for ids, limit, got in zip(sources, limits, together, strict=True):
        alone = search.greedy(model, ids, limit, top_k=0)
        assert (got.tokens, got.finished) == (alone.tokens, alone.finished)
        assert got.output.attentions.keys() == alone.output.attentions.keys()
        for kind, weights in alone.output.attentions.items():
            # the same shape: the padding's keys are cut off each sentence's cross maps
            assert got.output.attentions[kind].shape == weights.shape
            torch.testing.assert_close(got.output.attentions[kind], weights, rtol=0, atol=1e-5)
        torch.testing.assert_close(got.output.logits, alone.output.logits, rtol=1e-4, atol=1e-4)


@torch.inference_mode()
def test_tokens_only_and_limits_as_greedy_tokens(sources):
    model = _served("lstm")
    limits = [2, 30, 1, 30, 4, 30]  # some sentences cut by their limit, the others ending
    together = greedy_many(model, sources, limits, [None] * len(sources), keep=False)
    alone = [search.greedy_tokens(model, ids, limit) for ids, limit in zip(sources, limits, strict=True)]
    assert together == alone


@torch.inference_mode()
def test_a_sentence_told_to_stop_leaves_and_the_others_go_on(sources):
    model = _served("transformer")
    limits = [max_target_len(model, len(ids)) for ids in sources]
    steps = {"asked": 0}

    def stop_at_third_step() -> bool:
        steps["asked"] += 1
        return steps["asked"] > 2

    stops = [None, stop_at_third_step, None, None, None, None]
    together = greedy_many(model, sources, limits, stops, keep=False)
    assert isinstance(together[1], Stopped)
    others = [i for i in range(len(sources)) if i != 1]
    assert [together[i] for i in others] == [search.greedy_tokens(model, sources[i], limits[i]) for i in others]


@pytest.mark.parametrize("name", ["rnn", "lstm", "lstm-additive", "lstm-dot", "transformer"])
@torch.inference_mode()
def test_sentences_joining_and_leaving_between_steps_each_get_their_own_search(name, sources):
    """Continuous batching: sentences join a pool mid-way (at other positions than the ones decoding)
    and leave as they end; each gets its own search's pieces and maps, within float rounding."""
    model = _served(name)
    limits = [max_target_len(model, len(ids)) for ids in sources]
    pool, results = Pool(model), {}
    arrivals = {0: [0], 2: [1, 2], 3: [3], 5: [4, 5]}  # step -> sentences that join before it
    step = 0
    while pool or step <= max(arrivals):
        pool.join([Sentence(sources[i], limits[i], handle=i) for i in arrivals.get(step, [])])
        for row in pool.step():
            results[row.sentence.handle] = row.result
        step += 1
    assert sorted(results) == list(range(len(sources)))
    for i, ids in enumerate(sources):
        alone, got = search.greedy(model, ids, limits[i], top_k=0), results[i]
        assert (got.tokens, got.finished) == (alone.tokens, alone.finished)
        for kind, weights in alone.output.attentions.items():
            assert got.output.attentions[kind].shape == weights.shape
            torch.testing.assert_close(got.output.attentions[kind], weights, rtol=1e-3, atol=1e-5)
        torch.testing.assert_close(got.output.logits, alone.output.logits, rtol=1e-3, atol=1e-4)


@torch.inference_mode()
def test_a_sentence_alone_in_a_pool_is_its_own_search_bit_for_bit(sources):
    model = _served("transformer")
    pool = Pool(model)
    pool.join([Sentence(sources[2], max_target_len(model, len(sources[2])))])
    ended = []
    while pool:
        ended += pool.step()
    alone = search.greedy(model, sources[2], max_target_len(model, len(sources[2])), top_k=0)
    assert torch.equal(ended[0].result.output.logits, alone.output.logits)
    for kind, weights in alone.output.attentions.items():
        assert torch.equal(ended[0].result.output.attentions[kind], weights)


@torch.inference_mode()
def test_a_transformer_encodes_the_sentences_joining_at_one_step_in_one_padded_pass(sources):
    """One pass of the recorded padded encoder for every sentence joining; each sentence's encoder
    states and maps are its own (the padding cut off), within float rounding of its pass alone."""
    model = _served("transformer")
    shapes, padded = [], model.encoder_graph.padded
    model.encoder_graph.padded = lambda src: shapes.append(tuple(src.shape)) or padded(src)
    pool = Pool(model)
    pool.join([Sentence(ids, 30, handle=i) for i, ids in enumerate(sources)])
    assert shapes == [(len(sources), max(map(len, sources)))]
    for row, ids in zip(pool.rows, sources, strict=True):
        _, alone = model.encode_with_internals(torch.tensor([ids]))
        for got, want in ((row.internals["encoder_hidden"], alone["encoder_hidden"]),
                          (row.internals["attentions"]["encoder"], alone["attentions"]["encoder"])):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-5)
