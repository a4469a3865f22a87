import dataclasses

import pytest
import torch
from torch import nn

from models.attention import causal_mask, mask_if_needed
from models.config import TransformerConfig
from models.tokenizer import PAD_ID
from models.transformer import (
    AttentionCall,
    DecoderLayer,
    EncoderLayer,
    Transformer,
    head_row,
    sinusoidal_table,
)

CFG = TransformerConfig(vocab_size=40, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                        d_ff=64, dropout=0.0)


def _copy_attention(ref: nn.MultiheadAttention, mine) -> None:
    ref.in_proj_weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
    ref.in_proj_bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
    ref.out_proj.weight.copy_(mine.W_o.weight)
    ref.out_proj.bias.copy_(mine.W_o.bias)


def _copy_common(ref, mine, norms) -> None:
    ref.linear1.load_state_dict(mine.ff.W_1.state_dict())
    ref.linear2.load_state_dict(mine.ff.W_2.state_dict())
    for ref_norm, my_norm in norms:
        ref_norm.load_state_dict(my_norm.state_dict())


@torch.no_grad()
def test_encoder_layer_equals_torch_transformer_encoder_layer():
    torch.manual_seed(0)
    mine = EncoderLayer(CFG).eval()
    ref = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True).eval()
    _copy_attention(ref.self_attn, mine.self_attn)
    _copy_common(ref, mine, [(ref.norm1, mine.norm1), (ref.norm2, mine.norm2)])
    x = torch.randn(2, 6, 32)
    keep = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    out, weights = mine(x, keep.unsqueeze(1))
    ref_out = ref(x, src_key_padding_mask=~keep)
    torch.testing.assert_close(out[0], ref_out[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[1, :4], ref_out[1, :4], atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_decoder_layer_equals_torch_transformer_decoder_layer():
    torch.manual_seed(1)
    mine = DecoderLayer(CFG).eval()
    ref = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True).eval()
    _copy_attention(ref.self_attn, mine.self_attn)
    _copy_attention(ref.multihead_attn, mine.cross_attn)
    _copy_common(ref, mine, [(ref.norm1, mine.norm1), (ref.norm2, mine.norm2), (ref.norm3, mine.norm3)])
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 6, 32)
    keep = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    out, self_w, cross_w, _ = mine(x, memory, keep.unsqueeze(1))
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    ref_out = ref(x, memory, tgt_mask=causal, memory_key_padding_mask=~keep)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    assert torch.all(self_w.triu(1) == 0)
    assert torch.all(cross_w[1, :, :, 3:] == 0)


def test_sinusoidal_table_values():
    table = sinusoidal_table(50, 8)
    assert table.shape == (50, 8)
    torch.testing.assert_close(table[0], torch.tensor([0.0, 1.0] * 4))
    torch.testing.assert_close(table[3, 2], torch.sin(torch.tensor(3 / 10000 ** (2 / 8))))


@torch.no_grad()
def test_inputs_longer_than_the_table_get_the_same_encoding_computed_further():
    torch.manual_seed(0)
    model = Transformer(dataclasses.replace(CFG, max_len=16)).eval()
    assert torch.equal(model.positions(0, 40), sinusoidal_table(40, 32))
    assert torch.equal(model.positions(0, 40)[:16], model.pe)  # the stored rows, exactly
    assert torch.equal(model.positions(12, 8), sinusoidal_table(20, 32)[12:])  # across the end
    src = torch.randint(4, 40, (1, 40))
    wide = Transformer(dataclasses.replace(CFG, max_len=64)).eval()
    wide.load_state_dict(model.state_dict())
    torch.testing.assert_close(model.encode(src).states, wide.encode(src).states, rtol=0, atol=0)


def encoder_weights(model, src, positional):
    return model.encode_with_internals(src, positional=positional)[1]["attentions"]["encoder"]


@torch.no_grad()
def test_without_positions_self_attention_is_permutation_equivariant():
    torch.manual_seed(2)
    model = Transformer(CFG).eval()
    src = torch.tensor([[5, 9, 12, 7, 30, 11]])
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    w = encoder_weights(model, src, positional=False)
    w_perm = encoder_weights(model, src[:, perm], positional=False)
    expected = w[:, :, :, perm][..., perm]  # rows and columns follow the words
    torch.testing.assert_close(w_perm, expected, atol=1e-6, rtol=1e-5)
    w_pe = encoder_weights(model, src, positional=True)
    w_pe_perm = encoder_weights(model, src[:, perm], positional=True)
    assert (w_pe_perm - w_pe[:, :, :, perm][..., perm]).abs().max() > 1e-3


@torch.no_grad()
def test_incremental_decoding_matches_the_full_pass():
    torch.manual_seed(3)
    model = Transformer(CFG).eval()
    src, tgt = torch.tensor([[5, 9, 12, 0]]), torch.tensor([[1, 7, 8, 9, 10]])
    full = model(src, tgt)
    memory, cache, steps = model.encode(src), None, []
    for t in range(tgt.size(1)):
        logits, weights, cache = model.decode(memory, tgt[:, t : t + 1], cache)
        steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full.logits, atol=1e-5, rtol=1e-5)
    assert full.attentions["encoder"].shape == (1, 2, 4, 4, 4)
    assert full.attentions["decoder"].shape == (1, 2, 4, 5, 5)
    assert full.attentions["cross"].shape == (1, 2, 4, 5, 4)
    assert torch.all(full.attentions["cross"][..., 3] == 0)  # the padded source slot


@torch.no_grad()
def test_head_mask_changes_the_output_only_when_a_head_is_off():
    torch.manual_seed(4)
    model = Transformer(CFG).eval()
    src, tgt = torch.tensor([[5, 9, 12]]), torch.tensor([[1, 7, 8]])
    ones = {k: torch.ones(2, 4) for k in ("encoder", "decoder", "cross")}
    torch.testing.assert_close(model(src, tgt, head_mask=ones).logits, model(src, tgt).logits)
    off = {**ones, "cross": ones["cross"].clone()}
    off["cross"][1, 2] = 0
    assert not torch.allclose(model(src, tgt, head_mask=off).logits, model(src, tgt).logits)


def test_heads_off_become_a_mask_and_a_missing_head_is_named():
    model = Transformer(TransformerConfig(vocab_size=40, d_model=16, n_heads=4, n_encoder_layers=2,
                                          n_decoder_layers=3, d_ff=32))
    mask = model.head_mask([("decoder", 2, 1), ("decoder", 0, 3)])
    assert list(mask) == ["decoder"]
    assert mask["decoder"].tolist() == [[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 1, 1]]
    for bad in [("encoder", 2, 0), ("cross", 0, 4), ("memory", 0, 0), ("cross", -1, 0)]:
        with pytest.raises(ValueError, match="no head"):
            model.head_mask([bad])


@torch.no_grad()
def test_the_source_projected_once_gives_exactly_what_projecting_it_at_every_step_gives():
    """`encode` projects the source's keys and values once per sentence (`cross_kv`) for every
    decoding step; projecting them again at each step must agree bit for bit: logits, both maps,
    the cache. Two sentences, one with padding, and heads switched off."""
    torch.manual_seed(5)
    model = Transformer(CFG).eval()
    src = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]])
    heads_off = model.head_mask([("decoder", 1, 2), ("cross", 0, 1)])
    last = []
    for head_mask in (None, heads_off):
        memory = model.encode(src, head_mask=head_mask)
        general = dataclasses.replace(memory, cross_kv=None)  # no projected source: the general pass
        fast_cache = slow_cache = None
        for token in ([1, 1], [7, 9], [8, 10], [3, 4]):
            tgt = torch.tensor(token).unsqueeze(1)
            fast = model.decode(memory, tgt, fast_cache)
            slow = model.decode(general, tgt, slow_cache)
            assert torch.equal(fast[0], slow[0])
            for kind in ("decoder", "cross"):
                assert torch.equal(fast[1][kind], slow[1][kind])
            pairs = zip(fast[2], slow[2], strict=True)
            assert all(torch.equal(a, b) for f, s in pairs for a, b in zip(f, s, strict=True))
            fast_cache, slow_cache = fast[2], slow[2]
        assert torch.all(fast[1]["cross"][1, ..., 2:] == 0)  # the padded source slots
        last.append(fast[0])
    assert not torch.equal(*last)  # the switched-off heads changed the step


def reference_attention_calls(model, src, tgt_in, head_mask=None, positional=None) -> list[AttentionCall]:
    """`Transformer.attention_calls` as it was before it recorded through the layers' own forward
    (a verbatim copy, kept as the reference the recording must match bit for bit)."""
    calls: list[AttentionCall] = []

    def attend(kind, layer, module, query_in, key_in, mask, row):
        out, w = module(query_in, key_in, key_in, mask, row)
        calls.append(AttentionCall(kind, layer, module, query_in, key_in, mask, row, out, w))
        return out

    mask = mask_if_needed((src != PAD_ID).unsqueeze(1))
    x = model._embed(src, positional=positional)
    for i, layer in enumerate(model.encoder_layers):
        h = layer.norm1(x)
        x = x + attend("encoder", i, layer.self_attn, h, h, mask, head_row(head_mask, "encoder", i))
        x = x + layer.ff(layer.norm2(x))
    states = model.encoder_norm(x)
    x = model._embed(tgt_in)
    future = causal_mask(tgt_in.size(1), device=x.device) if tgt_in.size(1) > 1 else None
    for i, layer in enumerate(model.decoder_layers):
        h = layer.norm1(x)
        x = x + attend("decoder", i, layer.self_attn, h, h, future, head_row(head_mask, "decoder", i))
        h = layer.norm2(x)
        x = x + attend("cross", i, layer.cross_attn, h, states, mask, head_row(head_mask, "cross", i))
        x = x + layer.ff(layer.norm3(x))
    return calls


def same_tensor(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    """Both None, or equal in shape and in every bit."""
    return a is b if a is None or b is None else torch.equal(a, b)


@pytest.mark.parametrize("positional", [None, False])
@pytest.mark.parametrize("tgt", [[[1, 7, 8, 9], [1, 3, 4, 5]], [[1], [1]]], ids=["teacher-forced", "one-token"])
@torch.no_grad()
def test_attention_calls_record_what_the_pass_computed_bit_for_bit(positional, tgt):
    """The calls recorded through the layers' own forward: the same modules, inputs, masks, head
    switches, outputs and weights, bit for bit, as the sub-layers written out again computed them.
    Padding, heads switched off, the positional switch, one target token (no causal mask)."""
    torch.manual_seed(6)
    model = Transformer(dataclasses.replace(CFG, dropout=0.1)).eval()  # eval: the dropouts are the identity
    src, tgt = torch.tensor([[5, 9, 12, 7], [8, 6, 0, 0]]), torch.tensor(tgt)
    for head_mask in (None, model.head_mask([("encoder", 1, 0), ("decoder", 0, 2), ("cross", 1, 3)])):
        calls = model.attention_calls(src, tgt, head_mask, positional)
        expected = reference_attention_calls(model, src, tgt, head_mask, positional)
        assert [(c.kind, c.layer) for c in calls] == [(c.kind, c.layer) for c in expected]
        for got, want in zip(calls, expected, strict=True):
            assert got.module is want.module
            for field in ("query_in", "key_in", "mask", "head_mask", "output", "weights"):
                assert same_tensor(getattr(got, field), getattr(want, field)), (got.kind, got.layer, field)


@torch.no_grad()
def test_the_positional_switch_is_the_encoders_the_decoder_keeps_its_own():
    """`positional=False` takes the encoding off the source only: the decoder's first self-attention
    (which reads nothing from the source) is the same either way, and differs from that of a model
    configured without positions, whose decoder adds none."""
    torch.manual_seed(7)
    model = Transformer(CFG).eval()
    src, tgt = torch.tensor([[5, 9, 12, 7]]), torch.tensor([[1, 7, 8, 9]])
    on, off = model(src, tgt), model(src, tgt, positional=False)
    assert not torch.equal(on.attentions["encoder"], off.attentions["encoder"])
    assert torch.equal(on.attentions["decoder"][:, 0], off.attentions["decoder"][:, 0])
    unpositioned = Transformer(dataclasses.replace(CFG, positional=False)).eval()
    unpositioned.load_state_dict(model.state_dict())
    assert not torch.equal(unpositioned(src, tgt).attentions["decoder"][:, 0], on.attentions["decoder"][:, 0])


def _sublayer_model() -> Transformer:
    torch.manual_seed(5)
    return Transformer(CFG).eval()


@torch.no_grad()
def test_every_sublayer_on_is_the_normal_forward_bit_for_bit():
    model = _sublayer_model()
    src, tgt = torch.randint(3, 40, (2, 7)), torch.randint(3, 40, (2, 5))
    normal, switched = model(src, tgt), model(src, tgt, off=())
    assert torch.equal(normal.logits, switched.logits)
    for kind in normal.attentions:
        assert torch.equal(normal.attentions[kind], switched.attentions[kind])


@torch.no_grad()
def test_feed_forward_off_leaves_out_exactly_the_feed_forward_sublayers():
    """With the feed-forward off the pass equals the same model whose W_2 and b_2 are zero (so each
    FFN adds nothing) in every layer, and nothing else: the attention of the first encoder layer,
    which reads the stream before any feed-forward, is unchanged, the logits are not."""
    model = _sublayer_model()
    src, tgt = torch.randint(3, 40, (1, 7)), torch.randint(3, 40, (1, 5))
    normal, off = model(src, tgt), model(src, tgt, off=("feed_forward",))
    zeroed = _sublayer_model()
    for layer in [*zeroed.encoder_layers, *zeroed.decoder_layers]:
        layer.ff.W_2.weight.zero_()
        layer.ff.W_2.bias.zero_()
    torch.testing.assert_close(off.logits, zeroed(src, tgt).logits, atol=1e-6, rtol=1e-6)
    assert torch.equal(off.attentions["encoder"][:, 0], normal.attentions["encoder"][:, 0])
    assert not torch.allclose(off.logits, normal.logits)


@torch.no_grad()
def test_residual_off_replaces_the_stream_by_the_sublayer_output():
    layer = EncoderLayer(CFG).eval()
    x = torch.randn(1, 6, 32)
    h = layer.norm1(x)
    a, _ = layer.self_attn(h, h, h, None)
    out, _ = layer(x, None, off=frozenset({"residual_attention"}))
    torch.testing.assert_close(out, a + layer.ff(layer.norm2(a)))
    out, _ = layer(x, None, off=frozenset({"residual_feed_forward"}))
    torch.testing.assert_close(out, layer.ff(layer.norm2(x + a)))
    out, _ = layer(x, None, off=frozenset({"feed_forward"}))
    torch.testing.assert_close(out, x + a)


def test_an_unknown_sublayer_switch_is_refused_by_name():
    with pytest.raises(ValueError, match="feed_forward"):
        _sublayer_model()(torch.tensor([[3, 4]]), torch.tensor([[1]]), off=("ffn",))


@torch.no_grad()
def test_the_switch_reaches_the_decoder_through_the_memory():
    """Greedy decoding (encode, then one step at a time) reads `off` from the memory: its first
    step's logits are the teacher-forced pass's with the same switch."""
    model = _sublayer_model()
    src, bos = torch.randint(3, 40, (1, 6)), torch.tensor([[1]])
    memory = model.encode(src, off=("residual_feed_forward",))
    assert memory.off == {"residual_feed_forward"}
    logits, _, _ = model.decode(memory, bos)
    torch.testing.assert_close(logits, model(src, bos, off=("residual_feed_forward",)).logits)
