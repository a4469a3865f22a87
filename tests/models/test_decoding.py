import pytest
import torch

from models.architectures import build
from models.config import Seq2SeqConfig, TransformerConfig
from models.decoding import Stopped, beam_search, chosen_probabilities, greedy, greedy_batch, greedy_tokens
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
    without = greedy(model, [5, 9, 12, 7], max_len=10, top_k=0)  # maps only: no distributions
    assert without.top_k == [] and without.tokens == decoded.tokens
    assert torch.equal(without.output.logits, decoded.output.logits)
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


def _trace(history, node):
    """The tokens on the path from step 0 to `node` = (step, index), following the parents."""
    step, index = node
    tokens = []
    while step >= 0:
        n = history[step][index]
        tokens.append(n.token)
        if step == 0:
            assert n.parent is None
        else:
            assert history[step - 1][n.parent].status in ("kept", "forced")
            index = n.parent
        step -= 1
    return tokens[::-1]


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("prefix", [(), (7, 4)])
@torch.inference_mode()
def test_the_final_beam_traces_back_through_the_history(name, prefix):
    for seed in range(3):
        model = _model(name, seed)
        decoded = beam_search(model, [5, 9, 12, 7][: 2 + seed], beam_size=4, max_len=8, prefix=prefix)
        history = decoded.history
        assert [[n.status for n in step] for step in history[: len(prefix)]] == [["forced"]] * len(prefix)
        for step in history[len(prefix):]:
            assert 1 <= len(step) <= 8 and sum(n.status == "kept" for n in step) <= 4
            log_probs = [n.log_prob for n in step]
            assert log_probs == sorted(log_probs, reverse=True)
        for hypothesis in decoded.beam:
            path = _trace(history, hypothesis.node)
            assert path == hypothesis.tokens + ([EOS_ID] if hypothesis.finished else [])
            assert list(hypothesis.tokens[: len(prefix)]) == list(prefix)
            node = history[hypothesis.node[0]][hypothesis.node[1]]
            assert node.status == ("finished" if hypothesis.finished else "kept")
            assert (node.log_prob, node.score) == pytest.approx((hypothesis.log_prob, hypothesis.score))


@pytest.mark.parametrize("name", list(CONFIGS))
@torch.inference_mode()
def test_a_beam_of_one_follows_greedy_step_by_step(name):
    for seed in range(3):
        model = _model(name, seed)
        for prefix in ((), (11,), (11, 3, 8)):
            g = greedy(model, [5, 9, 12], max_len=10, prefix=prefix)
            b = beam_search(model, [5, 9, 12], beam_size=1, max_len=10, prefix=prefix)
            assert b.tokens == g.tokens and b.finished == g.finished
            kept = [next(n.token for n in step if n.status in ("kept", "forced", "finished"))
                    for step in b.history]
            assert kept == g.tokens + ([EOS_ID] if g.finished else [])


@pytest.mark.parametrize("name", list(CONFIGS))
@torch.inference_mode()
def test_a_forced_prefix_is_kept_and_the_continuation_is_the_model_s(name):
    model = _model(name, seed=2)
    model.out_bias[EOS_ID] = 0.0  # long enough greedy outputs to cut
    src = [5, 9, 12, 7, 20]
    plain = greedy(model, src, max_len=10, top_k=4)
    for k in range(len(plain.tokens) + 1):  # the greedy output's own start: greedy again
        forced = greedy(model, src, max_len=10, top_k=4, prefix=plain.tokens[:k])
        assert forced.tokens == plain.tokens and forced.finished == plain.finished
        torch.testing.assert_close(forced.output.logits, plain.output.logits)
        assert forced.top_k == plain.top_k
    prefix = [13, 13, 4]  # a start greedy would not choose: kept verbatim, then greedy continues
    forced = greedy(model, src, max_len=10, top_k=4, prefix=prefix)
    assert forced.tokens[:3] == prefix
    full = model(torch.tensor([src]), torch.tensor([[BOS_ID, *forced.tokens]]))
    torch.testing.assert_close(forced.output.logits, full.logits, atol=1e-5, rtol=1e-5)
    assert forced.output.attentions.keys() == full.attentions.keys()
    for kind, weights in full.attentions.items():  # the maps cover prefix and continuation
        if kind != "encoder":  # queries: <bos> and every output piece
            assert weights.size(3) == len(forced.tokens) + 1
        torch.testing.assert_close(forced.output.attentions[kind], weights, atol=1e-6, rtol=1e-5)
    continuation = forced.tokens[3:] + ([EOS_ID] if forced.finished else [])
    assert [step[0][0] for step in forced.top_k[3:]][: len(continuation)] == continuation
    probs = torch.softmax(_allowed_logits(full.logits[0]), dim=-1)
    for position, step in enumerate(forced.top_k):  # sorted, and the model's softmax
        p = [q for _, q in step]
        assert p == sorted(p, reverse=True)
        for token, q in step:
            assert q == pytest.approx(float(probs[position, token]), abs=1e-6)
    chosen = chosen_probabilities(forced)
    for position, token in enumerate(forced.tokens + ([EOS_ID] if forced.finished else [])):
        assert chosen[position] == pytest.approx(float(probs[position, token]), abs=1e-6)


def _allowed_logits(logits):
    logits = logits.clone()
    logits[:, [PAD_ID, BOS_ID]] = float("-inf")
    return logits


@pytest.mark.parametrize("prefix", [[EOS_ID], [BOS_ID], [PAD_ID], [30], [-1], [5] * 11])
def test_a_prefix_the_model_cannot_output_is_refused(prefix):
    model = _model("transformer")
    for search in (greedy, beam_search):
        with pytest.raises(ValueError, match="prefix"):
            search(model, [5, 9], max_len=10, prefix=prefix)


@torch.inference_mode()
def test_a_prefix_as_long_as_the_limit_is_the_whole_output():
    model = _model("lstm-dot")
    for search in (greedy, beam_search):
        decoded = search(model, [5, 9], max_len=3, prefix=[6, 7, 8])
        assert decoded.tokens == [6, 7, 8] and not decoded.finished
