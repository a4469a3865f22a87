"""Tiny untrained versions of the shipped architectures, saved as real checkpoint folders: the
one place the API, service and browser tests get their models from. They load and answer in
milliseconds, so the tests are fast, deterministic and independent of the shipped weights."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import torch

from models import checkpoint, snapshots
from models.architectures import MODEL_NAMES, build, default_config, initialized
from models.batches import collate, encode_pairs
from models.config import ModelConfig, TransformerConfig
from models.data import Pair
from models.teach import PAIRS as TEACH_PAIRS
from models.teach import TeachPairs, pairs_text
from models.tokenizer import BPETokenizer

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "checkpoints" / "tokenizer.json"
CURVE = [{"step": s, "epoch": s / 10, "tokens": 100 * s, "seconds": s / 2, "train_loss": 9.0 - s,
          "valid_loss": 9.5 - s, "valid_bleu": float(s)} for s in (1, 2, 3)]


def tiny_config(name: str, vocab_size: int, layers: int = 2, max_len: int | None = None) -> ModelConfig:
    """The shipped architecture of `name` (models.architectures.default_config), a few thousand
    parameters wide; `max_len` (if given) bounds the longest target (and the Transformer's table)."""
    config = default_config(name, vocab_size)
    if isinstance(config, TransformerConfig):
        small = {"d_model": 32, "n_heads": 4, "d_ff": 64,
                 "n_encoder_layers": layers, "n_decoder_layers": layers}
    else:
        small = {"d_embed": 16, "d_hidden": 32, "d_attn": 16}
    return dataclasses.replace(config, **small, **({"max_len": max_len} if max_len else {}))


def tiny_metrics(seed: int) -> dict:
    """Made-up evaluation figures in the shape of metrics.json, different per model."""
    base = 20.0 + 4 * seed
    buckets = [("1-5", 800, 12), ("6-10", 4000, 3), ("11-15", 1200, -6), ("16+", 300, -12)]
    return {"split": "test", "split_hash": f"{seed:016x}", "decoding": "greedy", "decode_seconds": 1.5 + seed,
            "examples": [{"source": "Je mange du pain.", "reference": "I eat bread.", "hypothesis": "I eat."}],
            "bleu": base, "bleu_low": base - 1, "bleu_high": base + 1, "chrf": base + 15, "pairs": 6300,
            "bleu_by_length": [{"bucket": b, "pairs": n, "bleu": base + d, "bleu_low": base + d - 900 / n,
                                "bleu_high": base + d + 1200 / n, "chrf": base + d + 15}
                               for b, n, d in buckets]}


def tiny_sublayers(seed: int) -> dict:
    """Made-up figures in the shape of sublayers.json: the model scored with each sub-layer switch off
    (whole BLEU points, which the page's two significant digits write exactly)."""
    base = tiny_metrics(seed)["bleu"]
    kept = {None: 1.0, "feed_forward": 0.05, "residual_attention": 0.3, "residual_feed_forward": 0.6}
    bleu = {off: float(round(base * k)) for off, k in kept.items()}
    return {"split": "test", "split_hash": f"{seed:016x}", "pairs": 6300, "decoding": "greedy",
            "variants": [{"off": off, "bleu": b, "bleu_low": b - 1, "bleu_high": b + 1, "chrf": b + 15,
                          "decode_seconds": 1.5} for off, b in bleu.items()]}


SUBLAYER_MODELS = ("transformer",)  # the tiny models scored with their sub-layers switched off
SNAPSHOT_MODELS = ("lstm-additive", "transformer")  # the tiny models trained "with snapshots"
SNAPSHOT_STEPS = (1, 2)  # their stored snapshots; step 0 is the initialization, 3 the shipped weights
SENTENCES = [Pair("Je mange du pain.", "I eat bread."), Pair("Le chat dort.", "The cat sleeps.")]


def write_tiny_checkpoints(folder: Path, names=MODEL_NAMES, extra: dict[str, ModelConfig] | None = None,
                           **config) -> Path:
    """tokenizer.json and one folder per name (`tiny_config(name, **config)`, seeded by its place in
    the list), plus `extra` folders of other names with the configs given. SNAPSHOT_MODELS get
    training snapshots (`write_tiny_snapshots`)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TOKENIZER, folder / "tokenizer.json")
    vocab_size = BPETokenizer.load(TOKENIZER).vocab_size
    configs = {name: tiny_config(name, vocab_size, **config) for name in names} | (extra or {})
    for seed, (name, model_config) in enumerate(configs.items()):
        torch.manual_seed(seed)
        checkpoint.save(build(model_config), folder / name, {"name": name})
        checkpoint.write_json(folder / name / checkpoint.METRICS, tiny_metrics(seed))
        checkpoint.write_json(folder / name / checkpoint.CURVE, CURVE)
        if name in SUBLAYER_MODELS:
            checkpoint.write_json(folder / name / checkpoint.SUBLAYERS, tiny_sublayers(seed))
        if name in SNAPSHOT_MODELS:
            write_tiny_snapshots(folder, name, seed)
    write_tiny_teach_pairs(folder)
    return folder


TEACH_HELD_OUT = [Pair("Le chat dort.", "The cat sleeps."), Pair("Il pleut.", "It's raining."),
                  Pair("Nous partons demain.", "We leave tomorrow.")]


def write_tiny_teach_pairs(folder: Path) -> TeachPairs:
    """checkpoints/teach/pairs.json in small: three held-out pairs, an example, five to rehearse."""
    pairs = TeachPairs(TEACH_HELD_OUT, [Pair("Elle lit un livre.", "She is reading a book.")],
                       [*SENTENCES, *TEACH_HELD_OUT], "0" * 16)
    (folder / TEACH_PAIRS).parent.mkdir(parents=True, exist_ok=True)
    (folder / TEACH_PAIRS).write_text(pairs_text(pairs))
    return pairs


def write_tiny_snapshots(folder: Path, name: str, seed: int) -> None:
    """Snapshots of a made-up training run of the tiny model `name`, which started from its seeded
    initialization (as models.train does) and ended at the shipped weights, step 3: step s's weights
    are the initialization moved s thirds of the way to them."""
    tokenizer = BPETokenizer.load(folder / "tokenizer.json")
    shipped = checkpoint.load(folder / name)
    start = initialized(shipped.config, seed).state_dict()
    end = {k: v + 0.3 * torch.randn_like(v) if v.dim() > 1 else v for k, v in shipped.state_dict().items()}
    shipped.load_state_dict(end)
    digest = checkpoint.weights_digest(initialized(shipped.config, seed))
    progress = {"step": 3, "epoch": 0.3, "tokens": 300, "training_seconds": 1.5, "valid_bleu": 3.0,
                "valid_loss": 6.5}
    checkpoint.save(shipped, folder / name, {"name": name, "training": {"seed": seed}, "progress": progress,
                                             checkpoint.INITIAL_SHA256: digest})
    batches = [collate([pair]) for pair in encode_pairs(tokenizer, SENTENCES)]
    steps = [{"step": 0, "epoch": 0, "seconds": 0.0, "valid_loss": 9.0, "valid_bleu": 0.0}]
    for step in SNAPSHOT_STEPS:
        model = build(shipped.config).eval()
        model.load_state_dict({k: start[k] + step / 3 * (end[k] - start[k]) for k in end})
        point = {"step": step, "epoch": step / 10, "seconds": step / 2, "valid_loss": 9.0 - step,
                 "valid_bleu": float(step)}
        steps.append(snapshots.store(folder / name, model, point, batches))
    checkpoint.write_json(folder / name / snapshots.FOLDER / snapshots.INDEX, {
        "precision": snapshots.PRECISION, "tolerance": snapshots.TOLERANCE,
        checkpoint.INITIAL_SHA256: digest, "steps": steps})
