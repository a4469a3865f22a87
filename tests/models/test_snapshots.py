"""Training snapshots: int8 storage within its stated tolerance, the index's checks, the
initialization rebuilt bit for bit, and training keeping the steps it is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models import checkpoint, snapshots, train
from models.architectures import build, initialized
from models.batches import collate, encode_pairs
from models.tokenizer import BPETokenizer
from tests.tiny import SENTENCES, TOKENIZER, tiny_config, write_tiny_checkpoints

TINY = '{"d_model": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "d_ff": 64}'


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_tiny_checkpoints(tmp_path_factory.mktemp("snapshots"), names=("lstm-additive", "transformer"))


def test_int8_groups_round_each_weight_to_half_a_step_of_its_group():
    torch.manual_seed(0)
    weights = {"w": torch.randn(6, 64) * torch.logspace(-3, 1, 6)[:, None], "b": torch.randn(6)}
    stored = snapshots.quantize(weights)
    assert stored["w"].dtype == torch.int8 and stored["b"].dtype == torch.float16
    scale = stored["w" + snapshots.SCALE].float()  # (rows, groups of 32)
    assert scale.shape == (6, 64 // snapshots.GROUP)
    back = snapshots.dequantize(stored)
    step = scale.repeat_interleave(snapshots.GROUP, dim=1)
    assert ((back["w"] - weights["w"]).abs() <= step / 2 + 1e-7).all()  # small rows keep their detail
    torch.testing.assert_close(back["b"], weights["b"], atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("name", ["lstm-additive", "transformer"])
def test_stored_snapshots_give_the_maps_of_the_fp32_weights_within_tolerance(folder, name):
    index = snapshots.read_index(folder / name)
    stored = [s for s in index["steps"] if "file" in s]
    assert stored and index["tolerance"] == snapshots.TOLERANCE
    for entry in stored:
        measured = snapshots.reference_deviation(folder / name, entry["step"])
        assert measured <= snapshots.TOLERANCE
        assert measured == pytest.approx(entry["max_map_deviation"], abs=1e-5)  # the index says what is true


def test_int8_that_would_move_a_map_too_far_is_stored_as_fp16(tmp_path, monkeypatch):
    tokenizer = BPETokenizer.load(TOKENIZER)
    model = build(tiny_config("transformer", tokenizer.vocab_size)).eval()
    batches = [collate([p]) for p in encode_pairs(tokenizer, SENTENCES)]
    monkeypatch.setattr(snapshots, "TOLERANCE", 0.0)  # no reduced copy is good enough now
    checkpoint.save(model, tmp_path / "m")
    entry = snapshots.store(tmp_path / "m", model, {"step": 5, "valid_bleu": 1.0}, batches)
    assert entry["precision"] == "fp16" and entry["max_map_deviation"] < 1e-3


def test_a_snapshot_that_differs_from_its_index_is_refused(folder, tmp_path):
    copy = tmp_path / "transformer"
    copy.mkdir()
    for file in (folder / "transformer").glob("*.json"):
        (copy / file.name).write_bytes(file.read_bytes())
    (copy / snapshots.FOLDER).mkdir()
    for file in (folder / "transformer" / snapshots.FOLDER).iterdir():
        (copy / snapshots.FOLDER / file.name).write_bytes(file.read_bytes())
    snapshots.load_snapshot(copy, 1)
    path = copy / snapshots.FOLDER / "step-1.safetensors"
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(snapshots.SnapshotError, match="step-1.safetensors"):
        snapshots.load_snapshot(copy, 1)
    with pytest.raises(snapshots.SnapshotError, match="no snapshot at step 7"):
        snapshots.load_snapshot(copy, 7)


def test_the_seeded_initialization_is_rebuilt_bit_for_bit():
    config = tiny_config("transformer", BPETokenizer.load(TOKENIZER).vocab_size)
    first, again = initialized(config, 3), initialized(config, 3)
    assert checkpoint.weights_digest(first) == checkpoint.weights_digest(again)
    assert checkpoint.weights_digest(first) != checkpoint.weights_digest(initialized(config, 4))


@pytest.mark.slow
def test_training_records_its_start_and_keeps_the_steps_asked_for(tmp_path):
    (tmp_path / "tokenizer.json").write_bytes(TOKENIZER.read_bytes())
    progress = train.main(["--model", "transformer", "--checkpoints", str(tmp_path), "--device", "cpu",
                           "--limit", "200", "--config", TINY, "--bleu-pairs", "5", "--max-tokens", "600",
                           "--minutes", "0.05", "--eval-minutes", "5", "--snapshots", "1,2", "--keep", "1"])
    folder = tmp_path / "transformer"
    meta = checkpoint.read_meta(folder)
    start = initialized(checkpoint.config_from_dict(meta["model"]), meta["training"]["seed"])
    assert meta[checkpoint.INITIAL_SHA256] == checkpoint.weights_digest(start)  # rebuilt = trained from
    kept = sorted(p.name for p in (folder / train.SNAPSHOTS_FP32).glob("*.safetensors"))
    assert kept == ["step-1.safetensors", "step-2.safetensors"]
    assert checkpoint.read_json(folder / train.SNAPSHOTS_FP32 / "step-2.json")["step"] == 2
    averaging = list((folder / train.AVERAGING).glob("*.safetensors"))
    assert [p.name for p in averaging] == [f"step-{progress.step}.safetensors"]  # only the last one


def test_averaging_takes_the_mean_of_the_kept_weights_and_keeps_the_best_on_validation(tmp_path):
    from safetensors.torch import save_file

    from models import average

    write_tiny_checkpoints(tmp_path, names=("transformer",))
    folder = tmp_path / "transformer"
    kept = checkpoint.load(folder)
    (folder / train.AVERAGING).mkdir()
    for step, shift in ((5, 0.0), (9, 0.2)):
        weights = {k: v + shift for k, v in kept.state_dict().items()}
        save_file(weights, str(folder / train.AVERAGING / f"step-{step}.safetensors"))
    mean = average.mean_of(folder, [5, 9])
    torch.testing.assert_close(mean["embed.weight"], kept.state_dict()["embed.weight"] + 0.1)
    report = average.average("transformer", tmp_path, last=2, pairs=5)
    assert list(report["scores"]) == ["kept", "last 1", "last 2"]
    assert report["scores"]["last 2"]["steps"] == [5, 9]
    best = max(report["scores"].values(), key=lambda s: s["valid_bleu"])["valid_bleu"]
    assert report["scores"][report["chosen"]]["valid_bleu"] == best
    saved = checkpoint.read_meta(folder)["progress"]
    if report["chosen"] != "kept":
        assert saved["averaged_steps"] == report["scores"][report["chosen"]]["steps"]
