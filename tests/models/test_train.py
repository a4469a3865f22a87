"""The training command end to end on the real data, shrunk to seconds."""

from pathlib import Path

import pytest
import torch

from models import checkpoint, evaluate, train

SHIPPED_TOKENIZER = Path(__file__).resolve().parents[2] / "checkpoints" / "tokenizer.json"
TINY = '{"d_model": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1, "d_ff": 64}'


def test_learning_rate_warms_up_then_decays():
    s = train.TrainingSettings(lr=1e-3, warmup=100)
    assert train.lr_at(1, s) == pytest.approx(1e-5)
    assert train.lr_at(100, s) == pytest.approx(1e-3)
    assert train.lr_at(400, s) == pytest.approx(5e-4)


def test_peak_learning_rate_per_model_unless_given():
    base = ["--minutes", "1"]
    assert train.parse_args(["--model", "transformer", *base]).lr == train.TrainingSettings.lr
    assert train.parse_args(["--model", "lstm-dot", *base]).lr == train.RECURRENT_LR
    assert train.parse_args(["--model", "rnn", "--lr", "0.0005", *base]).lr == 0.0005


@pytest.mark.slow
def test_train_writes_a_loadable_folder_and_resumes(tmp_path):
    (tmp_path / "tokenizer.json").write_bytes(SHIPPED_TOKENIZER.read_bytes())
    args = ["--model", "transformer", "--checkpoints", str(tmp_path), "--device", "cpu",
            "--limit", "400", "--config", TINY, "--bleu-pairs", "20", "--max-tokens", "800"]
    first = train.main([*args, "--minutes", "0.05", "--eval-minutes", "0.02"])
    folder = tmp_path / "transformer"
    assert first.step > 0 and (folder / "train_state.safetensors").exists()
    meta = checkpoint.read_meta(folder)
    assert meta["split_hash"] and meta["tokenizer_hash"] and meta["progress"]["hardware"]
    assert meta["model"]["d_model"] == 32
    curve = checkpoint.read_curve(folder)
    assert curve and {"step", "train_loss", "valid_loss", "valid_bleu"} <= set(curve[0])

    second = train.main([*args, "--minutes", "0.03", "--eval-minutes", "0.02", "--resume"])
    assert second.step > first.step and second.seconds > first.seconds and second.tokens > first.tokens
    resumed = checkpoint.read_curve(folder)
    assert resumed[: len(curve)] == curve and len(resumed) > len(curve)  # the curve goes on
    steps = [point["step"] for point in resumed]
    assert steps == sorted(set(steps)) and steps[len(curve)] > first.step and steps[-1] == second.step

    # a fresh machine has the committed checkpoint but not the training state: warm start
    for state in folder.glob("train_state.*"):
        state.unlink()
    shipped_step = checkpoint.read_meta(folder)["progress"]["step"]
    third = train.main([*args, "--minutes", "0.03", "--eval-minutes", "0.02", "--resume"])
    assert third.step > shipped_step > 0

    model = checkpoint.load(folder)
    assert isinstance(model, torch.nn.Module)
    metrics = evaluate.main(["--model", "transformer", "--checkpoints", str(tmp_path), "--split", "valid",
                             "--limit", "30"])
    assert 0 <= metrics["bleu"] <= 100 and metrics["bleu_by_length"]
