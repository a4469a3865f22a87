"""Does the way the server holds the weights change what the models say? (prints figures and
writes JSON; not a test)

    .venv/bin/python bench/fidelity.py [--models transformer,lstm-dot] [--pairs 0]
                                       [--layout input-major] [--precision fp16-weights] [--json FILE]

The server keeps its wide weight matrices column by column (models/serving/layout.py) and reads the weights
from fp16 copies (models/serving/precision.py): the same numbers, but dot products summed in another order,
so not bit-identical to the reference, the checkpoint in its own order multiplied from fp32 weights.
Per model, on the test split (all of it by default), both translate every sentence greedily, as
/api/attention does, and the report gives: the share of identical translations, test BLEU with
each, the largest difference of any attention weight (sentences with the same translation) and of
any next-piece probability. Issue 17's bar for a path that is not bit-identical: >= 99% identical,
BLEU within 0.1, every attention weight within 0.01.
"""

from __future__ import annotations

import argparse

import torch
from serving import ROOT, write_report  # bench/serving.py: this script's folder is on sys.path

from models import checkpoint
from models.data import load_split
from models.decoding import greedy
from models.evaluate import score
from models.serving import LAYOUTS, PRECISIONS, served
from models.tokenizer import BPETokenizer


@torch.inference_mode()
def compare(stored, served, tokenizer: BPETokenizer, pairs) -> dict:
    same, map_gap, prob_gap = 0, 0.0, 0.0
    outputs: dict[str, list[str]] = {"reference": [], "served": []}
    for pair in pairs:
        ids = tokenizer.encode(pair.fr)
        a, b = greedy(stored, ids), greedy(served, ids)
        outputs["reference"].append(tokenizer.decode(a.tokens))
        outputs["served"].append(tokenizer.decode(b.tokens))
        if a.tokens != b.tokens:
            continue
        same += 1
        for kind, weights in a.output.attentions.items():
            map_gap = max(map_gap, float((b.output.attentions[kind] - weights).abs().max()))
        probs = [torch.softmax(o.output.logits.float(), dim=-1) for o in (a, b)]
        prob_gap = max(prob_gap, float((probs[1] - probs[0]).abs().max()))
    bleu = {which: score(hyps, pairs)["bleu"] for which, hyps in outputs.items()}
    return {"pairs": len(pairs), "same_translation": round(same / len(pairs), 4), "bleu": bleu,
            "bleu_change": round(bleu["served"] - bleu["reference"], 2),
            "largest_map_change": map_gap, "largest_probability_change": prob_gap}


def main() -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="transformer", help="comma-separated checkpoint names")
    p.add_argument("--pairs", type=int, default=0, help="every Nth test pair, this many (0: all)")
    p.add_argument("--layout", default="input-major", choices=LAYOUTS)
    p.add_argument("--precision", default="fp16-weights", choices=PRECISIONS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = BPETokenizer.load(ROOT / "checkpoints" / "tokenizer.json")
    test = load_split().test
    pairs = test[:: max(len(test) // args.pairs, 1)][: args.pairs] if args.pairs else test
    report = {"served": {"layout": args.layout, "precision": args.precision}}
    for name in args.models.split(","):
        reference = checkpoint.load(ROOT / "checkpoints" / name)
        as_served = served(checkpoint.load(ROOT / "checkpoints" / name), args.layout, args.precision)
        report[name] = compare(reference, as_served, tokenizer, pairs)
        r = report[name]
        print(f"{name}, {args.layout} and {args.precision} against the checkpoint's order and fp32: "
              f"{r['same_translation']:.2%} of {r['pairs']} test translations identical, BLEU "
              f"{r['bleu']['reference']} -> {r['bleu']['served']}, largest change of an attention "
              f"weight {r['largest_map_change']:.1e}, of a probability {r['largest_probability_change']:.1e}")
    write_report(args.json, report)
    return report


if __name__ == "__main__":
    main()
