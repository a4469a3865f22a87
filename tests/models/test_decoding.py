import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig, TransformerConfig
from models.decoding import Stopped, beam_search, greedy, greedy_batch, greedy_tokens
from models.tokenizer import BOS_ID, EOS_ID, PAD_ID

CONFIGS = {
    "rnn": Seq2SeqConfig(vocab_size=30, cell="rnn", d_embed=16, d_hidden=24),
    "lstm-additive": Seq2SeqConfig(vocab_size=30, attention="additive", d_embed=16, d_hidden=24, d_attn=8),
    "lstm-dot": Seq2SeqConfig(vocab_size=30, attention="dot", d_embed=16, d_hidden=24),
    "transformer": TransformerConfig(vocab_size=30, d_model=32, n_heads=4, n_encoder_layers=2,
                                     n_decoder_layers=2, d_ff=64),
}


def _model(name, seed=0):
    torch.manual_seed(seed)
    model = build(CONFIGS[name]).eval()
    with torch.no_grad():  # make EOS likely now and then so hypotheses end at different lengths
        bias = model.out_bias
        bias[EOS_ID] = 2.0
    return model


@pytest.mark.parametrize("name", list(CONFIGS))
@torch.inference_mode()
def test_beam_of_one_is_greedy(name):
    for seed in range(3):
        model = _model(name, seed)
        src = [5, 9, 12, 7, 20][: 3 + seed]
        g, b = greedy(model, src, max_len=12), beam_search(model, src, beam_size=1, max_len=12)
        assert b.tokens == g.tokens and b.finished == g.finished


@pytest.mark.parametrize("name", list(CONFIGS))
@torch.inference_mode()
def test_greedy_internals_cover_every_produced_token(name):
    model = _model(name)
    decoded = greedy(model, [5, 9, 12, 7], max_len=10, top_k=3)
    T = len(decoded.tokens) + 1  # BOS plus the produced tokens
    assert decoded.output.logits.shape[:2] == (1, T)
    assert len(decoded.top_k) == T and all(len(step) == 3 for step in decoded.top_k)
    # the top-1 of each step is the token greedy produced (then EOS when finished)
    produced = decoded.tokens + ([EOS_ID] if decoded.finished else [])
    assert [step[0][0] for step in decoded.top_k][: len(produced)] == produced
    for kind, weights in decoded.output.attentions.items():
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
        if kind == "decoder":
            assert torch.all(weights.triu(1) == 0)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("max_len", [2, 12])  # 2: cut by the limit, so one step past the last token
@torch.inference_mode()
def test_greedy_collects_what_a_teacher_forced_pass_recomputes(name, max_len):
    """The maps gathered step by step are the full pass's maps: same keys, shapes and numbers."""
    model = _model(name, seed=1)
    src = [5, 9, 12, 7, 20]
    options = {"positional": False} if name == "transformer" else {}
    decoded = greedy(model, src, max_len=max_len, **options)
    full = model(torch.tensor([src]), torch.tensor([[BOS_ID, *decoded.tokens]]), **options)
    torch.testing.assert_close(decoded.output.logits, full.logits, atol=1e-5, rtol=1e-5)
    assert decoded.output.attentions.keys() == full.attentions.keys()
    for kind, weights in full.attentions.items():
        torch.testing.assert_close(decoded.output.attentions[kind], weights, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(decoded.output.encoder_hidden, full.encoder_hidden)


@pytest.mark.parametrize("name", list(CONFIGS))
@torch.inference_mode()
def test_beam_search_finds_at_least_the_greedy_score(name):
    model = _model(name, seed=4)
    src = [6, 7, 8, 9]
    g = beam_search(model, src, beam_size=1, max_len=10, alpha=0.0)
    b = beam_search(model, src, beam_size=6, max_len=10, alpha=0.0)
    assert b.beam and len(b.beam) <= 6
    assert b.beam[0].score >= g.beam[0].score - 1e-5
    scores = [c.score for c in b.beam]
    assert scores == sorted(scores, reverse=True)


@torch.inference_mode()
def test_never_produces_padding_or_bos_and_batch_equals_single():
    model = _model("transformer")
    src = torch.tensor([[5, 9, 12, 7], [8, 6, PAD_ID, PAD_ID]])
    batch = greedy_batch(model, src, max_len=10)
    assert all(t not in (PAD_ID, BOS_ID) for row in batch for t in row)
    assert batch[1] == greedy(model, [8, 6], max_len=10).tokens
    with torch.no_grad():  # now padding and BOS are by far the most likely (and EOS unlikely):
        model.out_bias[PAD_ID] = model.out_bias[BOS_ID] = 50.0  # still never chosen
        model.out_bias[EOS_ID] = -50.0
    outputs = [*greedy_batch(model, src, max_len=10), greedy(model, [8, 6], max_len=10).tokens,
               beam_search(model, [8, 6], beam_size=3, max_len=10).tokens]
    assert all(row and not {PAD_ID, BOS_ID} & set(row) for row in outputs)


def test_invalid_beam_and_empty_source_are_rejected():
    model = _model("rnn")
    with pytest.raises(ValueError):
        beam_search(model, [5], beam_size=9)
    with pytest.raises(ValueError):
        greedy(model, [])


@pytest.mark.parametrize("search", ["greedy", "greedy_tokens", "beam_search"])
@torch.inference_mode()
def test_a_search_told_to_stop_stops_before_its_next_step(search):
    model = _model("transformer")
    model.out_bias[EOS_ID] = -10.0  # no early end: the search would take all 20 steps
    run = {"greedy": greedy, "greedy_tokens": greedy_tokens, "beam_search": beam_search}[search]
    asked = []

    def stop():  # stop from the third decoder step on
        asked.append(1)
        return len(asked) >= 3

    with pytest.raises(Stopped):
        run(model, [5, 9, 12], max_len=20, stop=stop)
    assert len(asked) == 3

    def tokens(result):
        return result[0] if search == "greedy_tokens" else result.tokens

    # a stop test that never fires changes nothing
    never = run(model, [5, 9, 12], max_len=20, stop=lambda: False)
    assert tokens(never) == tokens(run(model, [5, 9, 12], max_len=20))
