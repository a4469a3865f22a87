"""Two copies of one model that hold its weights differently (the served layout, the fp16 copies)
must say the same: the checks both tests share."""

import torch

from models.decoding import beam_search, greedy, greedy_batch

SOURCES = [[5, 9, 12, 7, 20], [40, 41, 42], [7] * 11, [250, 3, 99, 120]]


@torch.inference_mode()
def assert_decodings_agree(reference, other, logits_tol: float, map_tol: float) -> None:
    """The same greedy and beam translations of SOURCES, with logits and every attention map
    within the tolerances."""
    for src in SOURCES:
        a, b = greedy(reference, src, max_len=12), greedy(other, src, max_len=12)
        assert a.tokens == b.tokens and a.finished == b.finished
        torch.testing.assert_close(b.output.logits, a.output.logits, atol=logits_tol, rtol=logits_tol)
        assert a.output.attentions.keys() == b.output.attentions.keys()
        for kind, weights in a.output.attentions.items():
            torch.testing.assert_close(b.output.attentions[kind], weights, atol=map_tol, rtol=0)
        beams = [beam_search(m, src, 3, max_len=12).tokens for m in (reference, other)]
        assert beams[0] == beams[1]


def assert_batches_and_gradients_agree(reference, other) -> None:
    """The same greedy batch, and the same parameter gradients of a teacher-forced pass within
    float rounding."""
    src = torch.tensor([[5, 9, 12, 7], [40, 41, 0, 0]])
    with torch.inference_mode():
        assert greedy_batch(reference, src, 10) == greedy_batch(other, src, 10)
    tgt = torch.tensor([[1, 4, 5], [1, 6, 7]])
    grads = []
    for model in (reference, other):
        model.zero_grad()
        model(src, tgt).logits.logsumexp(-1).sum().backward()
        grads.append([p.grad for p in model.parameters()])
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4)
