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
