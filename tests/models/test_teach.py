"""Teaching a copy of a model one pair (models/teach.py): the copy learns, the model given is never
touched, Adam is Adam, and every step says what it did."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from models import checkpoint
from models.architectures import build
from models.data import Pair
from models.teach import (
    Moments,
    TeachConfig,
    TeachEnd,
    TeachPairs,
    TeachStart,
    TeachStep,
    adam_step,
    draw_pairs,
    layer_of,
    pairs_text,
    teach,
)
from models.tokenizer import BPETokenizer
from tests.tiny import SENTENCES, TEACH_HELD_OUT, TOKENIZER, tiny_config

TOKENS = BPETokenizer.load(TOKENIZER)
PAIRS = TeachPairs(TEACH_HELD_OUT, [SENTENCES[1]], [*SENTENCES, *TEACH_HELD_OUT], "0" * 16)
PAIR = {"text": "Je mange du pain.", "target": "I eat bread."}


def tiny(name: str, seed: int = 0):
    torch.manual_seed(seed)
    return build(tiny_config(name, TOKENS.vocab_size)).eval()


def run(name: str, **settings) -> list:
    return list(teach(tiny(name), TOKENS, TeachConfig(**{**PAIR, "model": name, **settings}), PAIRS))


def test_adam_step_is_torch_s_adam():
    torch.manual_seed(0)
    ours = [torch.randn(3, 4), torch.randn(5)]
    theirs = [p.clone().requires_grad_(True) for p in ours]
    optimizer = torch.optim.Adam(theirs, lr=1e-2)
    moments = Moments.zeros(ours)
    for _ in range(3):
        grads = [torch.randn_like(p) for p in ours]
        for p, g in zip(theirs, grads, strict=True):
            p.grad = g.clone()
        before = [p.clone() for p in ours]
        changes = adam_step(ours, grads, moments, 1e-2)
        optimizer.step()
        for mine, torch_s, was, change in zip(ours, theirs, before, changes, strict=True):
            torch.testing.assert_close(mine, torch_s.detach(), rtol=1e-6, atol=1e-7)
            torch.testing.assert_close(change, mine - was)


@pytest.mark.parametrize(("name", "layer"), [
    ("embed.weight", "embed"), ("out_bias", "out"), ("encoder.cell.W.weight", "encoder"),
    ("decoder_layers.1.ff.W_1.weight", "decoder_layers.1"), ("decoder_norm.weight", "decoder_norm"),
])
def test_a_parameter_belongs_to_its_first_module_and_its_place_in_a_stack(name, layer):
    assert layer_of(name) == layer


@pytest.mark.parametrize("name", ["rnn", "lstm-additive", "transformer"])
def test_the_copy_learns_the_pair_and_the_model_given_is_untouched(name):
    model = tiny(name)
    digest = checkpoint.weights_digest(model)
    lines = list(teach(model, TOKENS, TeachConfig(**PAIR, model=name, steps=30, learning_rate=3e-2), PAIRS))
    assert checkpoint.weights_digest(model) == digest
    start, *steps, end = lines
    assert isinstance(start, TeachStart) and isinstance(end, TeachEnd)
    assert [s.step for s in steps] == list(range(1, 31)) and all(isinstance(s, TeachStep) for s in steps)
    assert start.target == TOKENS.pieces(TOKENS.encode(PAIR["target"]))
    assert steps[-1].loss < steps[0].loss / 4  # the loss of the pair falls
    assert steps[0].loss == pytest.approx(start.loss, rel=1e-3)  # the first step starts from the untouched copy
    assert all(s.learned == (s.reading.translation == PAIR["target"]) for s in steps)
    assert end.learned_at == next((s.step for s in steps if s.learned), None)
    assert end.bleu_change == pytest.approx(end.after.bleu - start.before.bleu, abs=0.011)
    assert start.before.pairs == len(TEACH_HELD_OUT) and len(end.after.examples) == 1


def test_every_step_says_each_layer_s_gradient_and_move_and_where_the_copy_looked():
    start, step, _ = run("lstm-additive", steps=1)
    names = [layer.name for layer in step.layers]
    assert len(names) == len(set(names)) and {"embed", "encoder", "decoder", "attention", "out"} <= set(names)
    assert all(layer.gradient > 0 and layer.moved > 0 for layer in step.layers)
    rows, cols = len(step.reading.pieces), len(start.source)
    assert len(step.reading.map) == rows and all(len(row) == cols for row in step.reading.map)
    assert all(sum(row) == pytest.approx(1, abs=0.01) for row in step.reading.map)
    assert run("lstm", steps=1)[1].reading.map is None  # the bottleneck has no map


def test_rehearsal_mixes_training_pairs_into_every_step_and_only_then():
    _, *steps, _ = run("lstm-additive", steps=3, rehearsal=True)
    assert all(s.rehearsal_loss is not None and s.rehearsal_loss > 0 for s in steps)
    _, *steps, _ = run("lstm-additive", steps=3)
    assert all(s.rehearsal_loss is None for s in steps)


def test_the_same_settings_give_the_same_run():
    first = [dataclasses.asdict(x) for x in run("transformer", steps=3, rehearsal=True)]
    assert first == [dataclasses.asdict(x) for x in run("transformer", steps=3, rehearsal=True)]


def test_stop_ends_the_steps_where_they_stand():
    asked = []
    lines = list(teach(tiny("rnn"), TOKENS, TeachConfig(**PAIR, model="rnn", steps=10), PAIRS,
                       stop=lambda: len(asked.append(1) or asked) > 2))
    assert [type(x).__name__ for x in lines] == ["TeachStart", "TeachStep", "TeachStep", "TeachEnd"]


def test_the_fixed_pairs_are_short_held_out_and_training_pairs_written_a_pair_a_line():
    test = [Pair(f"Je vois {i} chats.", f"I see {i} cats.") for i in range(100)]
    train = [Pair(f"Il a {i} ans et demi.", f"He is {i} and a half.") for i in range(300)]
    split = type("Split", (), {"test": test + [Pair("Non.", "No.")], "train": train, "hash": "h"})
    pairs = draw_pairs(split)
    assert len(pairs.held_out) == 64 and len(pairs.examples) == 3 and len(pairs.rehearsal) == 256
    assert not set(pairs.held_out) & set(pairs.examples) and set(pairs.rehearsal) <= set(train)
    text = pairs_text(pairs)
    assert text.count("\n") > 64 + 3 + 256
    assert TeachPairs.read_text(text) == pairs
