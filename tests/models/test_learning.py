"""A tiny model of each kind must learn to reverse short sequences: the whole training path
(forward, loss, backward, AdamW, decoding) works, not just the shapes."""

import pytest
import torch

from models.architectures import build
from models.batches import EncodedPair, collate
from models.config import Seq2SeqConfig, TransformerConfig
from models.decoding import greedy_batch
from models.train import loss_fn

VOCAB = 14  # 4 specials + 10 symbols


def _task(n: int, seed: int) -> list[EncodedPair]:
    g = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(n):
        length = int(torch.randint(2, 6, (1,), generator=g))
        seq = (torch.randint(4, VOCAB, (length,), generator=g)).tolist()
        pairs.append(EncodedPair(src=seq, tgt=seq[::-1]))
    return pairs


TINY = {
    "rnn": Seq2SeqConfig(vocab_size=VOCAB, cell="rnn", d_embed=32, d_hidden=96, dropout=0.0),
    "lstm": Seq2SeqConfig(vocab_size=VOCAB, cell="lstm", d_embed=32, d_hidden=64, dropout=0.0),
    "lstm-additive": Seq2SeqConfig(vocab_size=VOCAB, cell="lstm", attention="additive", d_embed=32,
                                   d_hidden=64, d_attn=32, dropout=0.0),
    "lstm-dot": Seq2SeqConfig(vocab_size=VOCAB, cell="lstm", attention="dot", d_embed=32, d_hidden=64,
                              dropout=0.0),
    "transformer": TransformerConfig(vocab_size=VOCAB, d_model=64, n_heads=4, n_encoder_layers=2,
                                     n_decoder_layers=2, d_ff=128, dropout=0.0, max_len=32),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TINY))
def test_tiny_model_learns_to_reverse(name):
    torch.manual_seed(0)
    model = build(TINY[name])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    train = _task(4000, seed=1)
    steps, batch_size = 300, 64
    for step in range(steps):
        start = (step * batch_size) % len(train)
        batch = collate(train[start : start + batch_size])
        loss = loss_fn(model(batch.src, batch.tgt_in).logits, batch.tgt_out, 0.0) / batch.n_tokens
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    model.eval()
    test = _task(200, seed=2)
    with torch.inference_mode():
        hyps = greedy_batch(model, collate(test).src, max_len=8)
    accuracy = sum(h == p.tgt for h, p in zip(hyps, test, strict=True)) / len(test)
    assert accuracy >= 0.9, f"{name} reversed only {accuracy:.0%} of the test sequences"
