"""Every shipped model as served, under every serving combination: its greedy and beam search
translations, logits and maps are those of the trained model holding its weights the same way,
bit for bit. The one-position step and its recorded graph add speed and nothing else; the layout
and the fp16 copies are the only things that change a number (within float rounding, tested in
test_layout.py and test_precision.py)."""

import itertools
from pathlib import Path

import pytest
import torch

from models import checkpoint
from models.architectures import MODEL_NAMES
from models.decoding import beam_search, greedy
from models.serving import LAYOUTS, PRECISIONS, STEPS, served, step_of
from models.serving.layout import input_major, layout_of
from models.serving.precision import half_weights, precision_of
from models.tokenizer import BPETokenizer

ROOT = Path(__file__).resolve().parents[3] / "checkpoints"
SENTENCES = ["Où est la gare ?", "Il pleut depuis ce matin, alors nous restons à la maison."]


@pytest.fixture(scope="module")
def sources():
    tokenizer = BPETokenizer.load(ROOT / "tokenizer.json")
    return [tokenizer.encode(s) for s in SENTENCES]


def _held(name: str, layout: str, precision: str):
    """The trained model, its weights held as `layout` and `precision` say, decoding as derived."""
    model = checkpoint.load(ROOT / name).requires_grad_(False)
    model = input_major(model) if layout == "input-major" else model
    return half_weights(model) if precision == "fp16-weights" else model


def _assert_same(a, b):
    assert (a.tokens, a.finished, a.top_k) == (b.tokens, b.finished, b.top_k)
    assert torch.equal(a.output.logits, b.output.logits)
    assert a.output.attentions.keys() == b.output.attentions.keys()
    for kind, weights in a.output.attentions.items():
        assert torch.equal(weights, b.output.attentions[kind]), kind
    beams = [[(h.tokens, h.log_prob, h.score) for h in d.beam] for d in (a, b)]
    assert beams[0] == beams[1]


@pytest.mark.parametrize("name", MODEL_NAMES)
@torch.inference_mode()
def test_the_served_model_decodes_bit_for_bit_as_the_trained_one(name, sources):
    for layout, precision in itertools.product(LAYOUTS, PRECISIONS):
        reference = _held(name, layout, precision)
        expected = [(greedy(reference, src), beam_search(reference, src, 4)) for src in sources]
        for step in STEPS:
            model = served(checkpoint.load(ROOT / name).requires_grad_(False), layout, precision, step)
            assert (layout_of(model), precision_of(model)) == (layout, precision)
            assert step_of(model) == step
            for src, (greedy_expected, beam_expected) in zip(sources, expected, strict=True):
                _assert_same(greedy(model, src), greedy_expected)
                _assert_same(beam_search(model, src, 4), beam_expected)
