"""seqmodels.MultiHeadAttention against torch.nn.MultiheadAttention with the same weights."""

import math

import pytest
import torch
from torch import nn

from seqmodels import MultiHeadAttention
from seqmodels.positional import RotaryEmbedding

E, H, B, TQ, TK = 16, 4, 3, 5, 7


def pair(batch_first=True, seed=0):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(E, H, batch_first=batch_first).eval()
    theirs = nn.MultiheadAttention(E, H, batch_first=batch_first).eval()
    with torch.no_grad():  # non-trivial biases, so a bias mix-up cannot hide
        ours.in_proj_bias.normal_()
        ours.out_proj.bias.normal_()
    assert set(ours.state_dict()) == set(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())
    return ours, theirs


def masks(kind: str):
    gen = torch.Generator().manual_seed(1)
    kpm = torch.zeros(B, TK, dtype=torch.bool)
    kpm[0, 4:] = True
    kpm[2, 6:] = True
    am = torch.rand(TQ, TK, generator=gen) > 0.6
    am[:, 0] = False  # every row keeps at least one key
    am3 = torch.rand(B * H, TQ, TK, generator=gen) > 0.6
    am3[..., 0] = False

    def as_float(m):
        return torch.zeros(m.shape).masked_fill(m, -math.inf)

    return {
        "none": {},
        "kpm-bool": {"key_padding_mask": kpm},
        "kpm-float": {"key_padding_mask": as_float(kpm)},
        "attn-bool": {"attn_mask": am},
        "attn-float": {"attn_mask": as_float(am) + torch.randn(TQ, TK, generator=gen)},
        "attn3-bool": {"attn_mask": am3},
        "both-bool": {"key_padding_mask": kpm, "attn_mask": am},
        "both-float": {"key_padding_mask": as_float(kpm), "attn_mask": as_float(am)},
    }[kind]


MASK_KINDS = ["none", "kpm-bool", "kpm-float", "attn-bool", "attn-float", "attn3-bool", "both-bool", "both-float"]


@pytest.mark.parametrize("mask_kind", MASK_KINDS)
def test_equals_torch_cross_attention(mask_kind):
    ours, theirs = pair()
    query, key, value = torch.randn(B, TQ, E), torch.randn(B, TK, E), torch.randn(B, TK, E)
    kwargs = masks(mask_kind)
    expected, expected_weights = theirs(query, key, value, need_weights=True, average_attn_weights=False, **kwargs)
    out, weights = ours(query, key, value, need_weights=True, **kwargs)
    assert weights.shape == (B, H, TQ, TK)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=0)
    fused, no_weights = ours(query, key, value, need_weights=False, **kwargs)  # the SDPA path
    assert no_weights is None
    torch.testing.assert_close(fused, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("batch_first", [True, False])
def test_equals_torch_self_attention_with_gradients(batch_first):
    ours, theirs = pair(batch_first)
    x = torch.randn(B, TQ, E) if batch_first else torch.randn(TQ, B, E)
    kpm = torch.zeros(B, TQ, dtype=torch.bool)
    kpm[1, 3:] = True
    expected, expected_weights = theirs(x, x, x, key_padding_mask=kpm, average_attn_weights=False)
    out, weights = ours(x, x, x, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=0)
    out.square().sum().backward()
    expected.square().sum().backward()
    for name, param in ours.named_parameters():
        torch.testing.assert_close(param.grad, theirs.get_parameter(name).grad, atol=1e-5, rtol=1e-5)


def test_causal_rows_sum_to_one_and_upper_triangle_is_zero():
    ours, theirs = pair()
    x = torch.randn(B, TQ, E)
    out, weights = ours(x, x, x, need_weights=True, is_causal=True)
    upper = torch.ones(TQ, TQ, dtype=torch.bool).triu(1)
    assert (weights[..., upper] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, TQ))
    expected, _ = theirs(x, x, x, attn_mask=upper, need_weights=False)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
    fused, _ = ours(x, x, x, is_causal=True)
    torch.testing.assert_close(fused, expected, atol=1e-5, rtol=0)


def test_pad_keys_get_zero_weight_and_fully_masked_rows_stay_finite():
    ours, _ = pair()
    x = torch.randn(B, TQ, E)
    pad = torch.zeros(B, TQ, dtype=torch.bool)
    pad[0, :2] = True  # left padding: under a causal mask query 0 and 1 of row 0 see only padding
    for need_weights in (False, True):
        out, weights = ours(x, x, x, key_padding_mask=pad, is_causal=True, need_weights=need_weights)
        assert torch.isfinite(out).all()
    assert (weights[0, :, 2:, :2] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, TQ))


@pytest.mark.parametrize("use_rope", [False, True])
def test_kv_cache_step_by_step_equals_full_causal_attention(use_rope):
    ours, _ = pair()
    rope = RotaryEmbedding(E // H, max_len=16) if use_rope else None
    x = torch.randn(B, 6, E)
    full, full_weights = ours(x, x, x, is_causal=True, rope=rope, need_weights=True)
    cache = {}
    # a 2-token chunk (a causal mask offset by nothing), then single tokens (offset by the cache)
    chunks = [x[:, :2], x[:, 2:3], x[:, 3:4], x[:, 4:6]]
    outputs = []
    for chunk in chunks:
        out, weights = ours(chunk, chunk, chunk, is_causal=True, rope=rope, cache=cache, need_weights=True)
        outputs.append(out)
        assert cache["k"].shape == (B, H, weights.size(-1), E // H)
    torch.testing.assert_close(torch.cat(outputs, dim=1), full, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, full_weights[:, :, 4:6], atol=1e-6, rtol=0)


def test_rope_changes_scores_by_relative_position_only():
    # Shifting every position by the same amount leaves RoPE attention unchanged.
    ours, _ = pair()
    rope = RotaryEmbedding(E // H, max_len=32)
    x = torch.randn(B, TQ, E)
    out, weights = ours(x, x, x, rope=rope, need_weights=True)
    _, plain_weights = ours(x, x, x, need_weights=True)
    assert not torch.allclose(weights, plain_weights, atol=1e-3)  # rope does something
    # Positions 9.. with 9 earlier keys hidden by the padding mask: the same as positions 0..
    shifted_cache = {}
    invisible = torch.ones(B, 9 + TQ, dtype=torch.bool)
    invisible[:, 9:] = False
    prefix = torch.randn(B, 9, E)
    ours(prefix, prefix, prefix, rope=rope, cache=shifted_cache)
    out_shifted, weights_shifted = ours(
        x, x, x, rope=rope, cache=shifted_cache, key_padding_mask=invisible, need_weights=True
    )
    torch.testing.assert_close(out_shifted, out, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights_shifted[..., 9:], weights, atol=1e-5, rtol=0)


def test_cross_attention_from_a_projected_memory():
    ours, _ = pair()
    query, memory = torch.randn(B, TQ, E), torch.randn(B, TK, E)
    kpm = masks("kpm-bool")["key_padding_mask"]
    expected, expected_weights = ours(query, memory, memory, key_padding_mask=kpm, need_weights=True)
    cache = ours.project_kv(memory)
    assert cache["k"].shape == (B, H, TK, E // H)
    for t in range(TQ):
        out, weights = ours(query[:, t : t + 1], None, None, key_padding_mask=kpm, cache=cache, need_weights=True)
        torch.testing.assert_close(out[:, 0], expected[:, t], atol=1e-5, rtol=0)
        torch.testing.assert_close(weights[:, :, 0], expected_weights[:, :, t], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="cache"):
        ours(query, None, None)


def test_dropout_only_in_training():
    torch.manual_seed(0)
    attention = MultiHeadAttention(E, H, dropout=0.5)
    x = torch.randn(B, TQ, E)
    attention.train()
    for need_weights in (True, False):
        first, second = (attention(x, x, x, need_weights=need_weights)[0] for _ in range(2))
        assert not torch.allclose(first, second)
    attention.eval()
    torch.testing.assert_close(attention(x, x, x)[0], attention(x, x, x, need_weights=True)[0], atol=1e-6, rtol=0)


def test_head_count_must_divide_width():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 4)
