"""Tiny random models of every kind, saved as real checkpoint folders under tmp_path, so the API
is tested end to end (lifespan, loading, routes) in seconds and without the trained weights."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient

from app.config import REPO_ROOT, Settings
from app.main import create_app
from app.services.registry import load_registry
from models import checkpoint
from models.architectures import MODEL_NAMES, build
from models.config import Seq2SeqConfig, TransformerConfig
from models.tokenizer import BPETokenizer

TOKENIZER = REPO_ROOT / "checkpoints" / "tokenizer.json"
CELLS = {"rnn": ("rnn", None), "lstm": ("lstm", None),
         "lstm-additive": ("lstm", "additive"), "lstm-dot": ("lstm", "dot")}
METRICS = {"bleu": 12.5, "chrf": 30.1, "pairs": 10,
           "bleu_by_length": [{"bucket": "1-5", "pairs": 4, "bleu": 20.0, "chrf": 40.0},
                              {"bucket": "6-10", "pairs": 6, "bleu": 8.0, "chrf": 25.0}]}
CURVE = [{"step": s, "epoch": s / 10, "tokens": 100 * s, "seconds": s / 2, "train_loss": 9.0 - s,
          "valid_loss": 9.5 - s, "valid_bleu": float(s)} for s in (1, 2, 3)]


def tiny_config(name: str, vocab_size: int):
    if name == "transformer":
        return TransformerConfig(vocab_size=vocab_size, d_model=32, n_heads=4, n_encoder_layers=2,
                                 n_decoder_layers=2, d_ff=64)
    cell, attention = CELLS[name]
    return Seq2SeqConfig(vocab_size=vocab_size, cell=cell, attention=attention,
                         d_embed=16, d_hidden=32, d_attn=16)


def write_tiny_checkpoints(folder: Path, names=MODEL_NAMES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TOKENIZER, folder / "tokenizer.json")
    vocab_size = BPETokenizer.load(TOKENIZER).vocab_size
    torch.manual_seed(0)
    for name in names:
        checkpoint.save(build(tiny_config(name, vocab_size)), folder / name, {"name": name})
        checkpoint.write_json(folder / name / checkpoint.METRICS, METRICS)
        checkpoint.write_json(folder / name / checkpoint.CURVE, CURVE)
    return folder


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory) -> Path:
    return write_tiny_checkpoints(tmp_path_factory.mktemp("checkpoints"))


def tiny_settings(folder: Path, **overrides) -> Settings:
    return Settings(checkpoints=folder, device="cpu", cache_size=0, **overrides)


@pytest.fixture(scope="session")
def client(tiny_checkpoints) -> Iterator[TestClient]:
    """The whole app on the tiny models, cache off so every request does the work."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints))) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def short_client(tiny_checkpoints) -> Iterator[TestClient]:
    """Random models rarely end a sentence; a short output limit keeps the hostile table quick."""
    with TestClient(create_app(tiny_settings(tiny_checkpoints, max_target_tokens=12))) as test_client:
        yield test_client


@pytest.fixture
def cached_registry(tiny_checkpoints):
    """Two tiny models with the result cache on, and their own model thread (closed after)."""
    registry = load_registry(tiny_checkpoints, ("lstm", "transformer"), device="cpu", cache_size=8)
    yield registry
    registry.worker.close()
