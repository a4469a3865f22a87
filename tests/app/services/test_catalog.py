"""What the server says about its models without running them."""

from __future__ import annotations

from app.runtime.loading import load_registry
from app.schemas.catalog import Clients
from app.services.catalog import health, model_infos, training_curve
from models import checkpoint
from tests.app.answers import sent
from tests.tiny import CURVE, SNAPSHOT_MODELS, write_tiny_checkpoints


def test_health_gives_the_limits_and_the_models(registry):
    clients = Clients(by="address, IPv6 by /64", trusted_proxies=["127.0.0.1"], one_client_behind="10.1.2.3")
    body = sent(health(registry, clients))
    assert body["status"] == "ok" and body["models"] == registry.names
    assert body["limits"] == {"max_chars": 500, "max_target_tokens": 128, "max_gradient_length": 200,
                              "max_beam_size": 8, "max_timing_length": 2000, "max_timing_lengths": 16}
    assert body["numerics"] == {"precision": "fp16-weights", "layout": "input-major"}
    assert body["clients"] == {"by": "address, IPv6 by /64", "trusted_proxies": ["127.0.0.1"],
                               "one_client_behind": "10.1.2.3"}


def test_each_model_says_what_it_has_inside(registry):
    infos = {m["name"]: m for m in sent(model_infos(registry))}
    assert [n for n, m in infos.items() if m["recurrent"]] == ["rnn", "lstm", "lstm-additive", "lstm-dot"]
    assert [n for n, m in infos.items() if m["cross_attention"]] == ["lstm-additive", "lstm-dot", "transformer"]
    assert [n for n, m in infos.items() if m["gates"]] == ["lstm", "lstm-additive", "lstm-dot"]
    assert [n for n, m in infos.items() if m["switches"]] == ["transformer"]
    assert infos["transformer"]["attention_kinds"] == ["cross", "encoder", "decoder"]
    assert (infos["transformer"]["layers"], infos["transformer"]["heads"]) == (2, 4)
    assert all(m["summary"] and m["parameters"] > 0 for m in infos.values())


def test_training_curve(registry):
    assert sent(training_curve(registry, "lstm")) == {"model": "lstm", "points": CURVE}


def test_the_kept_point_is_config_json_s_progress(tmp_path):
    folder = write_tiny_checkpoints(tmp_path, names=("rnn", "lstm"))
    meta = checkpoint.read_meta(folder / "lstm")
    progress = {"step": 2, "epoch": 0, "tokens": 200, "training_seconds": 1.0, "hardware": "cpu",
                "valid_bleu": 2.0, "valid_loss": 7.5}
    checkpoint.write_json(folder / "lstm" / checkpoint.CONFIG, {**meta, "progress": progress})
    with load_registry(folder, ("lstm", "rnn"), device="cpu") as registry:
        (folder / "rnn" / checkpoint.CONFIG).write_text("{ half a file")  # being rewritten, say
        infos = {m["name"]: m for m in sent(model_infos(registry))}
    assert infos["lstm"]["kept"] == {"step": 2, "seconds": 1.0, "epoch": 0, "valid_bleu": 2.0,
                                     "valid_loss": 7.5}
    assert infos["rnn"].get("kept") is None
    kept = next(p for p in CURVE if p["step"] == infos["lstm"]["kept"]["step"])  # a point of the curve
    assert kept["seconds"] == infos["lstm"]["kept"]["seconds"]


def test_a_checkpoint_without_a_training_record_keeps_no_point(registry):
    infos = [m for m in sent(model_infos(registry)) if m["name"] not in SNAPSHOT_MODELS]
    assert infos and all(m.get("kept") is None for m in infos)  # tests/tiny.py writes no progress for them


def test_the_recipe_is_config_json_s_training(tmp_path):
    """Chapter 1 says what differed in how the models were trained: read from config.json."""
    folder = write_tiny_checkpoints(tmp_path, names=("rnn", "lstm"))
    meta = checkpoint.read_meta(folder / "lstm")
    progress = {"step": 2, "epoch": 0, "training_seconds": 1.0, "averaged_steps": [1, 2]}
    training = {**meta.get("training", {}), "lr": 0.002, "label_smoothing": 0.1}
    checkpoint.write_json(folder / "lstm" / checkpoint.CONFIG,
                          {**meta, "training": training, "progress": progress})
    meta = checkpoint.read_meta(folder / "rnn")
    checkpoint.write_json(folder / "rnn" / checkpoint.CONFIG, {**meta, "training": {"lr": "fast"}})
    with load_registry(folder, ("lstm", "rnn"), device="cpu") as registry:
        infos = {m["name"]: m for m in sent(model_infos(registry))}
    assert infos["lstm"]["recipe"] == {"learning_rate": 0.002, "label_smoothing": 0.1, "averaged": 2}
    assert infos["rnn"].get("recipe") is None
