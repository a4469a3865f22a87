"""Our greedy translation against CTranslate2's on the same weights (prints figures; not a test).

    .venv/bin/pip install ctranslate2        # a benchmark's peer, not a dependency of the app
    .venv/bin/python bench/peer.py [--sentences 100] [--threads 2] [--json bench/results/peer.json]

The shipped Transformer is written into a CTranslate2 pre-norm Transformer spec (the shared
embedding as both embeddings and the output projection, our sinusoidal table as its position
encodings, q/k/v fused as CTranslate2 stores them), in fp32, in a temporary folder. Then, on
test-split sentences, interleaved in one run (the first runner rotating from sentence to sentence):
the time of one plain greedy translation (no maps kept) by ours as the server keeps the weights
(fp16 copies of the same numbers and input-major, models/serving/precision.py and layout.py), by ours with
fp32 weights only (ATTENTION_LAB_PRECISION=fp32), and by the peer, one intra-op pool of the same
threads each, and whether ours and the peer produce the same pieces. The peer computes in fp32 from
fp32 weights: a CPU build has no fp16 mode, and its int8 ones change the numbers. CTranslate2 returns
no per-head maps, so it is the bar for plain translation only. Issue 17's target: ours /
CTranslate2 <= 1.5.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import ctranslate2
import numpy as np
import torch
from ctranslate2.specs import TransformerSpec
from serving import ROOT, write_report  # bench/serving.py: this script's folder is on sys.path

from models import checkpoint
from models.data import load_split
from models.decoding import max_target_len
from models.serving import served
from models.serving.threads import greedy_tokens
from models.tokenizer import BOS, EOS, UNK, BPETokenizer


def convert(model, tokenizer: BPETokenizer, folder: str) -> None:
    """Write `model` (models.transformer.Transformer) as a CTranslate2 model in `folder`."""
    c = model.config
    w = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    spec = TransformerSpec.from_config((c.n_encoder_layers, c.n_decoder_layers), c.n_heads, pre_norm=True)
    table = model.pe.numpy()
    for side, norm in ((spec.encoder, "encoder_norm"), (spec.decoder, "decoder_norm")):
        side.scale_embeddings = True
        side.position_encodings.encodings = table
        norm_into(side.layer_norm, w, norm)
    spec.encoder.embeddings[0].weight = w["embed.weight"]
    spec.decoder.embeddings.weight = w["embed.weight"]
    spec.decoder.projection.weight = w["embed.weight"]
    spec.decoder.projection.bias = w["out_bias"]
    for i, layer in enumerate(spec.encoder.layer):
        p = f"encoder_layers.{i}."
        self_attention_into(layer.self_attention, w, p + "self_attn.", p + "norm1")
        ffn_into(layer.ffn, w, p)
        norm_into(layer.ffn.layer_norm, w, p + "norm2")
    for i, layer in enumerate(spec.decoder.layer):
        p = f"decoder_layers.{i}."
        self_attention_into(layer.self_attention, w, p + "self_attn.", p + "norm1")
        a = p + "cross_attn."
        linear_into(layer.attention.linear[0], w, a + "W_q")
        fused(layer.attention.linear[1], w, [a + "W_k", a + "W_v"])
        linear_into(layer.attention.linear[2], w, a + "W_o")
        norm_into(layer.attention.layer_norm, w, p + "norm2")
        ffn_into(layer.ffn, w, p)
        norm_into(layer.ffn.layer_norm, w, p + "norm3")
    spec.config.bos_token, spec.config.eos_token, spec.config.unk_token = BOS, EOS, UNK
    spec.config.decoder_start_token = BOS
    spec.config.add_source_bos = spec.config.add_source_eos = False
    spec.config.layer_norm_epsilon = 1e-5  # torch's LayerNorm default, which ours uses
    vocabulary = [tokenizer.tok.id_to_token(i) for i in range(tokenizer.vocab_size)]
    spec.register_source_vocabulary(vocabulary)
    spec.register_target_vocabulary(vocabulary)
    spec.validate()
    spec.optimize(quantization=None)
    spec.save(folder)


def linear_into(linear, w: dict, name: str) -> None:
    linear.weight, linear.bias = w[name + ".weight"], w[name + ".bias"]


def fused(linear, w: dict, names: list[str]) -> None:
    linear.weight = np.concatenate([w[n + ".weight"] for n in names])
    linear.bias = np.concatenate([w[n + ".bias"] for n in names])


def self_attention_into(attention, w: dict, prefix: str, norm: str) -> None:
    fused(attention.linear[0], w, [prefix + "W_q", prefix + "W_k", prefix + "W_v"])
    linear_into(attention.linear[1], w, prefix + "W_o")
    norm_into(attention.layer_norm, w, norm)


def ffn_into(ffn, w: dict, prefix: str) -> None:
    linear_into(ffn.linear_0, w, prefix + "ff.W_1")
    linear_into(ffn.linear_1, w, prefix + "ff.W_2")


def norm_into(norm, w: dict, name: str) -> None:
    norm.gamma, norm.beta = w[name + ".weight"], w[name + ".bias"]


def ours(model, ids: list[int], limit: int) -> list[int]:
    with torch.inference_mode():
        return greedy_tokens(model, ids, limit)[0]


def peer(translator, tokenizer: BPETokenizer, ids: list[int], limit: int) -> list[int]:
    result = translator.translate_batch([tokenizer.pieces(ids)], beam_size=1, max_decoding_length=limit)
    return [tokenizer.tok.token_to_id(t) for t in result[0].hypotheses[0]]


def race(model, fp32, translator, tokenizer: BPETokenizer, sentences: list[str]) -> list[dict]:
    """Per sentence, each runner once to warm up, then timed in a rotating order."""
    rows = []
    for n, text in enumerate(sentences):
        ids = tokenizer.encode(text)
        limit = max_target_len(model, len(ids))
        runs = {"ours": lambda: ours(model, ids, limit),  # noqa: B023 (called in this iteration only)
                "ours_fp32": lambda: ours(fp32, ids, limit),  # noqa: B023
                "peer": lambda: peer(translator, tokenizer, ids, limit)}  # noqa: B023
        for run in runs.values():
            run()  # warm
        timed = {}
        names = list(runs)
        for name in names[n % 3:] + names[: n % 3]:
            start = time.perf_counter()
            tokens = runs[name]()
            timed[name] = (time.perf_counter() - start, tokens)
        rows.append({"text": text, **{f"{name}_ms": t * 1e3 for name, (t, _) in timed.items()},
                     "same": timed["ours"][1] == timed["peer"][1], "pieces": len(timed["ours"][1])})
    return rows


def main() -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sentences", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = BPETokenizer.load(ROOT / "checkpoints" / "tokenizer.json")
    model = checkpoint.load(ROOT / "checkpoints" / "transformer")
    test = load_split().test
    sentences = [pair.fr for pair in test[:: max(len(test) // args.sentences, 1)][: args.sentences]]
    with tempfile.TemporaryDirectory() as folder:
        convert(model, tokenizer, folder)
        translator = ctranslate2.Translator(folder, device="cpu", inter_threads=1, intra_threads=args.threads)
        rows = race(served(model, "input-major", "fp16-weights"),
                    served(checkpoint.load(ROOT / "checkpoints" / "transformer"), "input-major", "fp32"),
                    translator, tokenizer, sentences)
    report = {"ctranslate2": ctranslate2.__version__, "threads": args.threads, "sentences": len(rows),
              "ours_over_peer": round(statistics.median(r["ours_ms"] / r["peer_ms"] for r in rows), 2),
              "ours_fp32_over_peer": round(statistics.median(r["ours_fp32_ms"] / r["peer_ms"]
                                                             for r in rows), 2),
              "same_translation": round(sum(r["same"] for r in rows) / len(rows), 4),
              "median_ms": {k: round(statistics.median(r[f"{k}_ms"] for r in rows), 2)
                            for k in ("ours", "ours_fp32", "peer")},
              "rows": rows}
    print(f"CTranslate2 {report['ctranslate2']}, {args.threads} threads, {len(rows)} test sentences: "
          f"ours / CTranslate2 {report['ours_over_peer']} (weights as the server keeps them: fp16 copies, "
          f"input-major), {report['ours_fp32_over_peer']} (fp32 weights only); medians of per-sentence "
          f"ratios; e.g. {report['median_ms']} ms here; same pieces on {report['same_translation']:.1%}")
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
