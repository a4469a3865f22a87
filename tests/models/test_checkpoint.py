import json

import pytest
import torch

from models import checkpoint
from models.architectures import build
from models.config import Seq2SeqConfig, TransformerConfig

CONFIGS = [
    Seq2SeqConfig(vocab_size=30, cell="rnn", d_embed=16, d_hidden=24),
    Seq2SeqConfig(vocab_size=30, cell="lstm", attention="additive", d_embed=16, d_hidden=24, d_attn=8),
    TransformerConfig(vocab_size=30, d_model=32, n_heads=4, n_encoder_layers=1, n_decoder_layers=1, d_ff=64),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_save_then_load_gives_identical_outputs(tmp_path, config):
    torch.manual_seed(0)
    model = build(config).eval()
    # the shipped weights are fp16: round once so the reference is what the file can hold
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    checkpoint.save(model, tmp_path, {"name": "x", "split_hash": "abc"})
    loaded = checkpoint.load(tmp_path)
    src, tgt = torch.tensor([[5, 6, 7, 0]]), torch.tensor([[1, 8, 9]])
    with torch.no_grad():
        a, b = model(src, tgt), loaded(src, tgt)
    assert torch.equal(a.logits, b.logits)
    for kind in a.attentions:
        assert torch.equal(a.attentions[kind], b.attentions[kind])
    assert checkpoint.read_meta(tmp_path)["split_hash"] == "abc"
    assert next(loaded.parameters()).dtype == torch.float32 and not loaded.training


def test_weights_are_fp16_safetensors_and_config_is_plain_json(tmp_path):
    model = build(CONFIGS[0])
    checkpoint.save(model, tmp_path)
    raw = (tmp_path / checkpoint.WEIGHTS).read_bytes()
    header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F16"}
    assert json.loads((tmp_path / checkpoint.CONFIG).read_text())["model"]["cell"] == "rnn"


def test_corrupt_weights_raise(tmp_path):
    checkpoint.save(build(CONFIGS[0]), tmp_path)
    (tmp_path / checkpoint.WEIGHTS).write_bytes(b"not a safetensors file")
    with pytest.raises(Exception):  # noqa: B017 - any clear error, never a silent half-load
        checkpoint.load(tmp_path)


def test_weights_are_readable_by_other_users(tmp_path):
    checkpoint.save(build(CONFIGS[0]), tmp_path)
    assert (tmp_path / checkpoint.WEIGHTS).stat().st_mode & 0o044 == 0o044


def test_config_records_the_weights_sha256(tmp_path):
    checkpoint.save(build(CONFIGS[0]), tmp_path)
    meta = checkpoint.read_meta(tmp_path)
    assert meta[checkpoint.SHA256] == checkpoint.sha256_of(tmp_path / checkpoint.WEIGHTS)
    assert len(meta[checkpoint.SHA256]) == 64


def test_shipped_configs_record_their_weights_sha256():
    from models.architectures import MODEL_NAMES
    from tests.tiny import ROOT

    for name in MODEL_NAMES:
        folder = ROOT / "checkpoints" / name
        if (folder / checkpoint.WEIGHTS).exists():
            recorded = checkpoint.read_meta(folder)[checkpoint.SHA256]
            assert recorded == checkpoint.sha256_of(folder / checkpoint.WEIGHTS)


def _flip_bytes(path, start=None, count=64):
    raw = bytearray(path.read_bytes())
    start = len(raw) // 2 if start is None else start
    for i in range(start, start + count):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_altered_weights_of_the_same_size_are_refused_by_name(tmp_path):
    folder = tmp_path / "lstm"
    checkpoint.save(build(CONFIGS[1]), folder)
    size = (folder / checkpoint.WEIGHTS).stat().st_size
    _flip_bytes(folder / checkpoint.WEIGHTS)
    assert (folder / checkpoint.WEIGHTS).stat().st_size == size
    with pytest.raises(checkpoint.CheckpointError, match=r"lstm/model\.safetensors .*sha256"):
        checkpoint.load(folder)


@pytest.mark.parametrize("damage, message", [
    ("no config", r"lstm/config\.json is missing"),
    ("config not json", r"lstm/config\.json is not a model config"),
    ("config without model", r"lstm/config\.json is not a model config"),
    ("no weights", r"lstm/model\.safetensors is missing"),
    ("truncated", r"lstm/model\.safetensors is not a readable safetensors file"),
    ("nan", r"lstm/model\.safetensors holds NaN or infinite weights"),
])
def test_every_load_failure_names_the_file_and_the_fault(tmp_path, damage, message):
    folder = tmp_path / "lstm"
    model = build(CONFIGS[1])
    if damage == "nan":
        with torch.no_grad():
            next(model.parameters()).fill_(float("nan"))
    checkpoint.save(model, folder)
    weights, config = folder / checkpoint.WEIGHTS, folder / checkpoint.CONFIG
    if damage == "no config":
        config.unlink()
    elif damage == "config not json":
        config.write_text("{truncated")
    elif damage == "config without model":
        config.write_text("{}")
    elif damage == "no weights":
        weights.unlink()
    elif damage == "truncated":
        weights.write_bytes(weights.read_bytes()[:1000])
        meta = checkpoint.read_meta(folder)
        meta.pop(checkpoint.SHA256)  # an old checkpoint without the record: the reader still says why
        checkpoint.write_json(config, meta)
    with pytest.raises(checkpoint.CheckpointError, match=message):
        checkpoint.load(folder)
