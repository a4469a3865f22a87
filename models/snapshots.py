"""Training snapshots: the same model at a few steps of its training, small enough to ship.

    python -m models.snapshots --model transformer --run runs/ckpt [--steps 50,150,300,600]

`models.train --snapshots 50,150,...` keeps the fp32 weights of those steps beside the run
(`RUN/NAME/snapshots-fp32/step-N.safetensors` + the curve point as JSON). This script reduces them
to int8 (groups of 32 weights with a scale each), keeping the shared embedding, or else every
tensor, in fp16 where int8 would move an attention weight by more than 0.01, and writes them next to
the shipped checkpoint:

    checkpoints/NAME/snapshots/step-N.safetensors   int8 groups + fp16 scales (vectors, maybe more, fp16)
    checkpoints/NAME/snapshots/step-N.maps.safetensors  the fp32 weights' maps on 8 validation sentences
    checkpoints/NAME/snapshots/index.json           per step: curve point, sha256, precision, map deviation

The untrained state is not stored: `models.architectures.initialized` rebuilds it from the config
and the training seed (config.json's `initial_weights_sha256` proves it is the one training
started from). The last point of the timeline is the shipped checkpoint itself.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import sacrebleu
import torch
from safetensors.torch import load_file, save_file

from models import checkpoint
from models.architectures import build, initialized
from models.batches import collate, encode_pairs
from models.data import load_split
from models.evaluate import translate_all
from models.tokenizer import BPETokenizer

log = logging.getLogger("models.snapshots")
FOLDER, INDEX = "snapshots", "index.json"
GROUP = 32  # weights per int8 scale
PRECISION = (f"int8 in groups of {GROUP} weights along a row, one fp16 scale each; 1-D tensors fp16; "
             "each step's precision says what else stayed fp16")
TOLERANCE = 0.01  # largest change of any attention weight the reduced precision may cause
REFERENCE_SENTENCES = 8  # validation sentences whose fp32 maps are shipped beside each snapshot
SCALE = ".group_scale"  # key suffix of a quantized tensor's scales


class SnapshotError(LookupError):
    """No snapshot at that step, or a snapshot file that does not match its index."""


def quantize(state: dict[str, torch.Tensor], keep: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """Matrices to int8 in groups of GROUP weights along a row, each group with its own fp16 scale
    (max |w| of the group / 127); vectors, and tensors whose name contains a string of `keep`, to
    fp16."""
    out = {}
    for name, tensor in state.items():
        w = tensor.detach().to("cpu", torch.float32)
        if w.dim() < 2 or any(part in name for part in keep):
            out[name] = w.to(torch.float16).contiguous()
            continue
        groups = _groups(w)  # (rows, groups, group)
        scale = (groups.abs().amax(dim=2).clamp_min(1e-8) / 127).to(torch.float16)  # (rows, groups)
        q = torch.round(groups / scale.float()[..., None]).clamp(-127, 127)
        out[name] = q.to(torch.int8).reshape(w.shape).contiguous()
        out[name + SCALE] = scale.contiguous()
    return out


def _groups(w: torch.Tensor) -> torch.Tensor:
    rows = w.reshape(w.shape[0], -1)  # (rows, everything else)
    size = GROUP if rows.shape[1] % GROUP == 0 else rows.shape[1]
    return rows.reshape(rows.shape[0], -1, size)


def dequantize(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """fp32 weights back from `quantize`'s tensors (or from fp16 ones)."""
    state = {}
    for name, tensor in stored.items():
        if name.endswith(SCALE):
            continue
        if tensor.dtype == torch.int8:
            scale = stored[name + SCALE].float()  # (rows, groups)
            state[name] = (_groups(tensor.float()) * scale[..., None]).reshape(tensor.shape)
        else:
            state[name] = tensor.to(torch.float32)
    return state


def reduced(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` whose weights went through int8 and back (what a snapshot file gives)."""
    copy = build(model.config).eval()
    copy.load_state_dict(dequantize(quantize(model.state_dict())))
    return copy


@torch.inference_mode()
def map_deviation(reference: torch.nn.Module, other: torch.nn.Module, batches: list) -> float:
    """Largest |difference| of any attention weight between two models of the same architecture,
    teacher-forced on the same batches (each one sentence: no padding to mask)."""
    reference.eval(), other.eval()
    worst = 0.0
    for batch in batches:
        a = reference(batch.src, batch.tgt_in).attentions
        b = other(batch.src, batch.tgt_in).attentions
        for kind in a:
            worst = max(worst, (a[kind] - b[kind]).abs().max().item())
    return worst


def deviation_batches(tokenizer: BPETokenizer, pairs, count: int = 40) -> list:
    """`count` validation pairs, one per batch, for `map_deviation`."""
    return [collate([pair]) for pair in encode_pairs(tokenizer, pairs[:count])]


def read_index(folder: Path) -> dict:
    """The snapshot index of checkpoint folder `folder` ({"steps": []} when it has none)."""
    index = checkpoint.read_json(Path(folder) / FOLDER / INDEX)
    return index if isinstance(index, dict) else {"steps": []}


def load_snapshot(folder: str | Path, step: int) -> torch.nn.Module:
    """Checkpoint folder `folder`'s model at training step `step` (stored snapshots only), in eval
    mode. SnapshotError when there is none or its file does not match the index's sha256."""
    folder = Path(folder)
    entry = next((s for s in read_index(folder)["steps"] if s.get("step") == step and "file" in s), None)
    if entry is None:
        raise SnapshotError(f"{folder.name} has no snapshot at step {step}")
    path = folder / FOLDER / entry["file"]
    if not path.exists() or checkpoint.sha256_of(path) != entry["sha256"]:
        raise SnapshotError(f"{folder.name}/{FOLDER}/{entry['file']} is missing or differs from its index")
    model = build(checkpoint.config_from_dict(checkpoint.read_meta(folder)["model"]))
    model.load_state_dict(dequantize(load_file(str(path))))
    return model.eval()


def write_snapshots(name: str, run: Path, checkpoints: Path, steps: list[int] | None, data: str | None) -> dict:
    """Reduce the run's fp32 snapshots (all, or `steps`), measure them, write them and the index."""
    source, target = run / name / "snapshots-fp32", checkpoints / name / FOLDER
    meta = checkpoint.read_meta(checkpoints / name)
    config = checkpoint.config_from_dict(meta["model"])
    tokenizer = BPETokenizer.load(checkpoints / "tokenizer.json")
    split = load_split(data)
    batches = deviation_batches(tokenizer, split.valid)
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("step-*"):
        old.unlink()
    found = sorted(int(p.stem.split("-")[1]) for p in source.glob("step-*.safetensors"))
    bleu_pairs = split.valid[: meta["training"]["bleu_pairs"]]
    index = {"precision": PRECISION, "tolerance": TOLERANCE,
             checkpoint.INITIAL_SHA256: meta.get(checkpoint.INITIAL_SHA256),
             "steps": [untrained_point(config, meta, tokenizer, bleu_pairs, split.valid)]}
    for step in [s for s in found if steps is None or s in steps]:
        fp32 = build(config).eval()
        fp32.load_state_dict(load_file(str(source / f"step-{step}.safetensors")))
        entry = store(checkpoints / name, fp32, checkpoint.read_json(source / f"step-{step}.json"), batches)
        index["steps"].append(entry)
        megabytes = (target / entry["file"]).stat().st_size / 2**20
        log.info("%s step %d: valid BLEU %.2f, %s, map deviation %.5f, %.1f MB", name, step,
                 entry["valid_bleu"], entry["precision"], entry["max_map_deviation"], megabytes)
    checkpoint.write_json(target / INDEX, index)
    return index


def store(folder: Path, model: torch.nn.Module, point: dict, batches: list) -> dict:
    """Write `model` (fp32, at curve point `point`) as a snapshot of checkpoint folder `folder`, in
    the smallest of PRECISIONS that moves no map weight by more than TOLERANCE on `batches`, with
    the fp32 maps of a few `batches` beside it so that anyone can check the stored copy against
    them. Returns the snapshot's index entry (the caller writes the index)."""
    target = Path(folder) / FOLDER
    target.mkdir(parents=True, exist_ok=True)
    step = point["step"]
    stored, precision, deviation = reduce(model, batches)
    path, maps = target / f"step-{step}.safetensors", target / f"step-{step}.maps.safetensors"
    save_file(stored, str(path))
    save_file(reference_maps(model, batches[:REFERENCE_SENTENCES]), str(maps))
    for written in (path, maps):
        written.chmod(0o644)
    return {**curve_fields(point), "file": path.name, "sha256": checkpoint.sha256_of(path),
            "precision": precision, "max_map_deviation": round(deviation, 6)}


# From smallest to largest: the first whose maps stay within TOLERANCE is stored. On the Transformer's
# snapshots int8 everywhere moved a map weight by up to 0.017, int8 with the shared embedding
# (token embedding and output projection at once) in fp16 by at most 0.006.
# Each: the names (parts of) kept in fp16; "" is in every name.
PRECISIONS = {"int8": (), "int8, embeddings fp16": ("embed",), "fp16": ("",)}


def reduce(model: torch.nn.Module, batches: list) -> tuple[dict[str, torch.Tensor], str, float]:
    """(tensors to store, their precision, the largest map change they cause on `batches`)."""
    small = build(model.config).eval()
    for label, keep in PRECISIONS.items():
        stored = quantize(model.state_dict(), keep)
        small.load_state_dict(dequantize(stored))
        deviation = map_deviation(model, small, batches)
        if deviation <= TOLERANCE or label == "fp16":
            return stored, label, deviation
    raise AssertionError("unreachable: fp16 is always stored")


@torch.inference_mode()
def reference_maps(model: torch.nn.Module, batches: list) -> dict[str, torch.Tensor]:
    """The fp32 model's teacher-forced maps on `batches`, with the ids that produced them."""
    model.eval()
    out = {}
    for i, batch in enumerate(batches):
        out[f"{i}.src"], out[f"{i}.tgt_in"] = batch.src.contiguous(), batch.tgt_in.contiguous()
        for kind, weights in model(batch.src, batch.tgt_in).attentions.items():
            out[f"{i}.{kind}"] = weights.contiguous()
    return out


@torch.inference_mode()
def reference_deviation(folder: str | Path, step: int) -> float:
    """Largest |difference| between stored snapshot `step`'s maps and the fp32 maps kept beside it."""
    model = load_snapshot(folder, step)
    stored = load_file(str(Path(folder) / FOLDER / f"step-{step}.maps.safetensors"))
    worst = 0.0
    for i in range(len({k.split(".")[0] for k in stored})):
        maps = model(stored[f"{i}.src"], stored[f"{i}.tgt_in"]).attentions
        for kind, weights in maps.items():
            worst = max(worst, (weights - stored[f"{i}.{kind}"]).abs().max().item())
    return worst


def curve_fields(point: dict) -> dict:
    return {key: point.get(key) for key in ("step", "epoch", "seconds", "valid_loss", "valid_bleu")}


def untrained_point(config, meta: dict, tokenizer: BPETokenizer, bleu_pairs, valid) -> dict:
    """Step 0: the seeded initialization, measured like a curve point (nothing stored for it)."""
    from models.train import validation_loss  # training's own measure, so the points compare

    model = initialized(config, meta["training"]["seed"]).eval()
    digest = checkpoint.weights_digest(model)
    if meta.get(checkpoint.INITIAL_SHA256) not in (None, digest):
        raise SnapshotError("the rebuilt initialization differs from the one training started from")
    loss = validation_loss(model, encode_pairs(tokenizer, valid), torch.device("cpu"),
                           meta["training"]["max_tokens"])
    hyps = translate_all(model, tokenizer, [p.fr for p in bleu_pairs])
    bleu = sacrebleu.corpus_bleu(hyps, [[p.en for p in bleu_pairs]]).score
    return {"step": 0, "epoch": 0, "seconds": 0.0, "valid_loss": round(loss, 4), "valid_bleu": round(bleu, 2)}


def main(argv: list[str] | None = None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--run", default="checkpoints", help="the training run's checkpoints folder")
    p.add_argument("--checkpoints", default="checkpoints", help="where the shipped checkpoint is")
    p.add_argument("--steps", default=None, help="comma-separated steps to keep (default: all)")
    p.add_argument("--data", default=None, help="path to the Tatoeba zip")
    args = p.parse_args(argv)
    steps = [int(s) for s in args.steps.split(",")] if args.steps else None
    return write_snapshots(args.model, Path(args.run), Path(args.checkpoints), steps, args.data)


if __name__ == "__main__":
    main()
