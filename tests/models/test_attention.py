import torch
from torch import nn

from models.attention import (
    AdditiveAttention,
    DotAttention,
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)


def _keys_and_mask():
    torch.manual_seed(0)
    keys = torch.randn(2, 5, 8)
    mask = padding_mask(torch.tensor([5, 3]), 5)  # second sequence has 2 padded keys
    return keys, mask


def test_padding_mask_marks_real_tokens():
    assert padding_mask(torch.tensor([2, 0, 3]), 3).tolist() == [
        [True, True, False], [False, False, False], [True, True, True]]


def test_causal_mask_hides_the_future_and_handles_a_cache():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    # one new query after two cached positions sees all three
    assert causal_mask(1, 3).tolist() == [[True, True, True]]


def test_additive_and_dot_rows_sum_to_one_and_ignore_padding():
    keys, mask = _keys_and_mask()
    query = torch.randn(2, 4, 8)
    for attention in (AdditiveAttention(8, 8, 6), DotAttention()):
        context, weights = attention(query, keys, mask)
        assert context.shape == (2, 4, 8) and weights.shape == (2, 4, 5)
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4))
        assert torch.all(weights[1, :, 3:] == 0)
        torch.testing.assert_close(context, weights @ keys)


def test_padding_does_not_change_the_result():
    keys, mask = _keys_and_mask()
    query = torch.randn(1, 4, 8)
    attention = AdditiveAttention(8, 8, 6)
    short, w_short = attention(query, keys[1:, :3], mask[1:, :3])
    garbage = keys[1:].clone()
    garbage[:, 3:] = 1e3  # whatever sits in padded slots must not matter
    padded, w_padded = attention(query, garbage, mask[1:])
    torch.testing.assert_close(padded, short)
    torch.testing.assert_close(w_padded[..., :3], w_short)


def test_additive_score_is_the_formula():
    keys, _ = _keys_and_mask()
    query = torch.randn(2, 1, 8)
    att = AdditiveAttention(8, 8, 6)
    s, h = query[0, 0], keys[0, 2]
    expected = att.v.weight[0] @ torch.tanh(att.W.weight @ s + att.U.weight @ h + att.U.bias)
    torch.testing.assert_close(att.score(query, keys)[0, 0, 2], expected)


def test_scaled_dot_product_matches_pytorch_and_causal_mask_hides_future():
    torch.manual_seed(1)
    q, k, v = torch.randn(3, 2, 6, 16).unbind(0)
    mask = causal_mask(6)
    context, weights = scaled_dot_product_attention(q, k, v, mask)
    reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(context, reference, atol=1e-5, rtol=1e-5)
    assert torch.all(weights.triu(1) == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6))


def test_multi_head_attention_equals_torch_multihead_attention():
    torch.manual_seed(2)
    d, h = 32, 4
    mine = MultiHeadAttention(d, h).eval()
    ref = nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
        ref.out_proj.weight.copy_(mine.W_o.weight)
        ref.out_proj.bias.copy_(mine.W_o.bias)
    query, memory = torch.randn(2, 5, d), torch.randn(2, 7, d)
    keep = padding_mask(torch.tensor([7, 4]), 7)
    out, weights = mine(query, memory, memory, keep.unsqueeze(1))
    ref_out, ref_weights = ref(query, memory, memory, key_padding_mask=~keep,
                               need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, ref_weights, atol=1e-5, rtol=1e-5)
    assert weights.shape == (2, h, 5, 7)
    assert torch.all(weights[1, :, :, 4:] == 0)


def test_switching_a_head_off_removes_its_contribution():
    torch.manual_seed(3)
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 5, 16)
    full, _ = mha(x, x, x)
    off, weights = mha(x, x, x, head_mask=torch.tensor([1.0, 0.0, 1.0, 1.0]))
    assert not torch.allclose(full, off)
    # the output is W_o applied to the heads side by side: zero head 1's slice by hand
    q, k, v = (mha._split(lin(x)) for lin in (mha.W_q, mha.W_k, mha.W_v))
    ctx, _ = scaled_dot_product_attention(q, k, v)
    ctx[:, 1] = 0
    torch.testing.assert_close(off, mha.W_o(ctx.transpose(1, 2).reshape(1, 5, 16)))
    assert weights.shape == (1, 4, 5, 5)


def test_keys_projected_once_give_the_same_attention_as_projected_each_time():
    keys, mask = _keys_and_mask()
    query = torch.randn(2, 3, 8)
    for attention in (AdditiveAttention(8, 8, 6), DotAttention()):
        projected = attention.project(keys)  # what a decoder computes once per sentence
        for step in range(3):  # ... and hands to each step
            ahead = attention(query[:, step : step + 1], keys, mask, projected)
            each = attention(query[:, step : step + 1], keys, mask)
            torch.testing.assert_close(ahead, each, rtol=0, atol=0)
