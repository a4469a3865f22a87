"""The five checkpoints the app ships: complete, consistent with the data and tokenizer, loadable,
and translating."""

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from models import checkpoint, snapshots
from models.architectures import MODEL_NAMES, count_parameters, initialized
from models.data import load_split
from models.decoding import greedy
from models.serving import served as as_served
from models.serving.precision import HalfLinear, HalfTiedEmbedding
from models.tokenizer import BPETokenizer

ROOT = Path(__file__).resolve().parents[2] / "checkpoints"


@pytest.fixture(scope="module")
def tokenizer():
    return BPETokenizer.load(ROOT / "tokenizer.json")


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_folder_is_complete_and_consistent(name, tokenizer):
    folder = ROOT / name
    for file in (checkpoint.WEIGHTS, checkpoint.CONFIG, checkpoint.METRICS, checkpoint.CURVE):
        assert (folder / file).exists(), f"{name}: {file} missing"
    assert (folder / checkpoint.WEIGHTS).stat().st_size <= 16 * 2**20
    meta = checkpoint.read_meta(folder)
    assert meta["split_hash"] == load_split().hash
    assert meta["tokenizer_hash"] == tokenizer.hash
    assert meta["progress"]["hardware"] and meta["progress"]["training_seconds"] > 0
    metrics = checkpoint.read_metrics(folder)
    assert metrics["split"] == "test" and metrics["pairs"] == len(load_split().test)
    assert 0 < metrics["bleu"] <= 100 and len(metrics["bleu_by_length"]) == 4
    assert checkpoint.read_curve(folder)


@pytest.mark.parametrize("name", MODEL_NAMES)
@torch.inference_mode()
def test_loads_and_translates(name, tokenizer):
    model = checkpoint.load(ROOT / name)
    assert count_parameters(model) == checkpoint.read_meta(ROOT / name)["parameters"]
    decoded = greedy(model, tokenizer.encode("Je mange du pain."))
    assert tokenizer.decode(decoded.tokens).strip()


@pytest.mark.parametrize("name", MODEL_NAMES)
@torch.inference_mode()
def test_the_served_weights_translate_and_map_as_the_stored_ones(name, tokenizer):
    """The server decodes with the weights input-major and read from fp16 copies (models/serving):
    on test sentences the same translations, and maps and scores equal to
    the checkpoint's fp32 weights in their own order within float rounding."""
    stored = checkpoint.load(ROOT / name)
    served = as_served(checkpoint.load(ROOT / name), "input-major", "fp16-weights")
    test = load_split().test
    for pair in test[:: len(test) // 12][:12]:
        ids = tokenizer.encode(pair.fr)
        a, b = greedy(stored, ids), greedy(served, ids)
        assert a.tokens == b.tokens, pair.fr
        torch.testing.assert_close(b.output.logits, a.output.logits, atol=1e-4, rtol=1e-5)
        for kind, weights in a.output.attentions.items():
            torch.testing.assert_close(b.output.attentions[kind], weights, atol=1e-5, rtol=0)


def test_quality_follows_the_story():
    """Chapter order on the test split: transformer > both attention LSTMs > lstm > rnn."""
    bleu = {name: checkpoint.read_metrics(ROOT / name)["bleu"] for name in MODEL_NAMES}
    attending = [bleu["lstm-additive"], bleu["lstm-dot"]]
    assert bleu["transformer"] > max(attending)
    assert min(attending) > bleu["lstm"] > bleu["rnn"]
    by_length = {name: {r["bucket"]: r["bleu"] for r in checkpoint.read_metrics(ROOT / name)["bleu_by_length"]}
                 for name in MODEL_NAMES}
    for bucket, bleu in by_length["transformer"].items():  # the README: it leads in every length group
        assert bleu > max(by_length[name][bucket] for name in MODEL_NAMES if name != "transformer"), bucket


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_the_longest_group_is_the_smallest_and_the_least_certain(name):
    """The bottleneck chapter's caption: the longest group holds the fewest sentences, and for every model that
    translates it at all (the rnn scores ~2 BLEU there, with a narrow bar near zero) its bar (the
    95% bootstrap interval of its BLEU) is the widest; each bar brackets its BLEU."""
    rows = checkpoint.read_metrics(ROOT / name)["bleu_by_length"]
    longest = rows[-1]
    assert longest["bucket"] == "16+" and longest["pairs"] == min(r["pairs"] for r in rows)
    width = {r["bucket"]: r["bleu_high"] - r["bleu_low"] for r in rows}
    if longest["bleu"] >= 10:
        assert width["16+"] == max(width.values())
    assert all(r["bleu_low"] <= r["bleu"] <= r["bleu_high"] for r in rows)


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_the_fp16_copies_halve_the_bytes_a_step_reads(name):
    """The line under the text box: with fp16-weights the decoding steps read half the bytes.
    Every shipped weight matrix gets a copy: all but the norms' and biases' numbers (under 1%)."""
    model = as_served(checkpoint.load(ROOT / name), "input-major", "fp16-weights")
    copied = sum(m.weight.numel() for m in model.modules() if isinstance(m, HalfLinear | HalfTiedEmbedding))
    assert copied / count_parameters(model) > 0.99


# each French sentence -> the translations accepted as right ("gare" is the (train) station)
EVERYDAY = {"Je mange du pain.": {"I eat bread."},
            "Où est la gare ?": {"Where is the station?", "Where's the station?", "Where's the train station?",
                                 "Where is the train station?"},
            "Nous avons faim.": {"We're hungry.", "We are hungry."}}


@pytest.mark.parametrize("name", ["lstm-additive", "lstm-dot", "transformer"])
@torch.inference_mode()
def test_everyday_sentences_and_alignment(name, tokenizer):
    model = checkpoint.load(ROOT / name)
    for french, right in EVERYDAY.items():
        assert tokenizer.decode(greedy(model, tokenizer.encode(french)).tokens) in right, french
    if name == "transformer":
        return
    # the content words attend to the words they translate
    source = tokenizer.encode("Je mange du pain.")
    decoded = greedy(model, source)
    weights = decoded.output.attentions["cross"][0, 0, 0]  # (T, S)
    src, out = tokenizer.pieces(source), tokenizer.pieces(decoded.tokens)
    aligned = {out[i]: src[int(weights[i].argmax())] for i in range(len(out))}
    assert aligned["▁eat"] == "▁mange" and aligned["▁bread"] == "▁pain"


SNAPSHOT_BUDGET = 40 * 2**20  # all shipped training snapshots together
TRAINED_WITH_SNAPSHOTS = [n for n in MODEL_NAMES if (ROOT / n / snapshots.FOLDER / snapshots.INDEX).exists()]


def test_the_snapshots_fit_the_repository_budget():
    files = [f for name in TRAINED_WITH_SNAPSHOTS for f in (ROOT / name / snapshots.FOLDER).iterdir()]
    assert sum(f.stat().st_size for f in files) <= SNAPSHOT_BUDGET


@pytest.mark.parametrize("name", TRAINED_WITH_SNAPSHOTS)
def test_snapshots_belong_to_the_shipped_run_and_keep_its_maps(name):
    """Each stored snapshot loads (its sha256 checked), gives the attention its fp32 weights gave
    within the stated tolerance, and comes from the run whose seeded start the config rebuilds."""
    meta = checkpoint.read_meta(ROOT / name)
    index = snapshots.read_index(ROOT / name)
    start = initialized(checkpoint.config_from_dict(meta["model"]), meta["training"]["seed"])
    recorded = index[checkpoint.INITIAL_SHA256]
    assert recorded == meta[checkpoint.INITIAL_SHA256] == checkpoint.weights_digest(start)
    steps = [s["step"] for s in index["steps"]]
    assert steps[0] == 0 and steps == sorted(steps) and steps[-1] < meta["progress"]["step"]
    for entry in index["steps"][1:]:
        assert snapshots.reference_deviation(ROOT / name, entry["step"]) <= snapshots.TOLERANCE
        assert entry["max_map_deviation"] <= snapshots.TOLERANCE


# Each shipped model's seeded initialization (its config and training seed rebuilt by
# `initialized`), as the code drew it when the checkpoints were trained: the gradients chapter's "at
# initialization" curves start from these weights, so a change to how a model is built must keep them.
INITIAL_DIGESTS = {
    "rnn": "cf6c5b374d7e06e6dda082c6fb61bb102a996760f8d27830a1479ce288142dae",
    "lstm": "cf99431399f9657c1ed372a6565eaa515386094575aefeec613c76f4125c8738",
    "lstm-additive": "fc7b343efdc9cedb4d5284aec34ad91da28c84416fb6dd44fb401ee9c0e69c47",
    "lstm-dot": "fb4252c4940cf1d8b1afc0cc02992c5b2014208561d71b4002ea3163ecb5e1ec",
    "transformer": "b09e1669ad769ff043ad8a2386c29608ccb9cb78597d5fce82bec05527d9a043",
}


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_the_seeded_initialization_is_the_one_training_started_from(name):
    """The rebuilt initialization is the pinned one, equal to the digest the checkpoint records where
    it records one, with the state-dict names of the shipped weights (checkpoints load by name)."""
    meta = checkpoint.read_meta(ROOT / name)
    start = initialized(checkpoint.config_from_dict(meta["model"]), meta["training"]["seed"])
    assert checkpoint.weights_digest(start) == INITIAL_DIGESTS[name]
    assert meta.get(checkpoint.INITIAL_SHA256, INITIAL_DIGESTS[name]) == INITIAL_DIGESTS[name]
    assert start.state_dict().keys() == load_file(ROOT / name / checkpoint.WEIGHTS).keys()
