"""Transformer, GPT and BERT: torch's layers as reference, traces, incremental decoding, tying."""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqmodels import BERT, GPT, Transformer, build_model, make_config, reorder_state
from seqmodels.positional import sinusoidal
from seqmodels.transformer_blocks import DecoderLayer, EncoderLayer

V, VS = 23, 19  # target and source vocabularies


def config(family, **overrides):
    values = dict(vocab_size=V, max_len=12, d_model=32, num_heads=4, num_layers=2, d_ff=48, dropout=0.0)
    if family == "transformer":
        values["src_vocab_size"] = VS
    values.update(overrides)
    return make_config(family, **values)


def model(family, seed=0, **overrides):
    torch.manual_seed(seed)
    return build_model(config(family, **overrides)).eval()


def batch(seed=0):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(5, VS, (3, 7), generator=gen)
    src_pad = torch.zeros(3, 7, dtype=torch.bool)
    src_pad[1, 5:] = True  # right padding
    tgt = torch.randint(5, V, (3, 6), generator=gen)
    tgt_pad = torch.zeros(3, 6, dtype=torch.bool)
    tgt_pad[2, 4:] = True
    return src, src_pad, tgt, tgt_pad


ALL_KINDS = list(itertools.product(["sinusoidal", "learned", "rope"], [True, False]))


@pytest.mark.parametrize("norm_first, activation", [(True, "relu"), (False, "relu"), (True, "gelu")])
def test_encoder_layer_equals_torch(norm_first, activation):
    torch.manual_seed(0)
    cfg = config("bert", norm_first=norm_first)
    ours = EncoderLayer(cfg, getattr(F, activation)).eval()
    theirs = nn.TransformerEncoderLayer(32, 4, 48, 0.0, activation, batch_first=True, norm_first=norm_first).eval()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(3, 7, 32)
    pad = batch()[1]
    for is_causal in (False, True):
        mask = torch.ones(7, 7, dtype=torch.bool).triu(1) if is_causal else None
        expected = theirs(x, src_mask=mask, src_key_padding_mask=pad)
        out, _ = ours(x, pad, is_causal=is_causal)
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_layer_equals_torch(norm_first):
    torch.manual_seed(0)
    ours = DecoderLayer(config("transformer", norm_first=norm_first)).eval()
    theirs = nn.TransformerDecoderLayer(32, 4, 48, 0.0, batch_first=True, norm_first=norm_first).eval()
    theirs.load_state_dict(ours.state_dict())
    x, memory = torch.randn(3, 6, 32), torch.randn(3, 7, 32)
    _, src_pad, _, tgt_pad = batch()
    causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
    expected = theirs(x, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
    out, _, _ = ours(x, memory, tgt_pad, src_pad)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_equals_a_stack_of_torch_layers(norm_first):
    ours = model("transformer", norm_first=norm_first)
    src, src_pad, tgt, tgt_pad = batch()
    d = 32
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(d, 4, 48, 0.0, batch_first=True, norm_first=norm_first), 2,
        norm=nn.LayerNorm(d) if norm_first else None, enable_nested_tensor=False,
    ).eval()
    decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(d, 4, 48, 0.0, batch_first=True, norm_first=norm_first), 2,
        norm=nn.LayerNorm(d) if norm_first else None,
    ).eval()
    for k in range(2):
        encoder.layers[k].load_state_dict(ours.encoder_layers[k].state_dict())
        decoder.layers[k].load_state_dict(ours.decoder_layers[k].state_dict())
    if norm_first:
        encoder.norm.load_state_dict(ours.encoder_norm.state_dict())
        decoder.norm.load_state_dict(ours.decoder_norm.state_dict())
    table = sinusoidal(12, d)
    # Vaswani 3.4: embeddings times sqrt(d_model), plus the sinusoidal table
    src_x = ours.src_embed.token.weight[src] * math.sqrt(d) + table[:7]
    tgt_x = ours.tgt_embed.token.weight[tgt] * math.sqrt(d) + table[:6]
    memory = encoder(src_x, src_key_padding_mask=src_pad)
    causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
    hidden = decoder(tgt_x, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
    expected = hidden @ ours.tgt_embed.token.weight.T  # tied output projection
    torch.testing.assert_close(ours(src, tgt, src_pad, tgt_pad), expected, atol=1e-5, rtol=0)


def test_transformer_trace():
    ours = model("transformer")
    src, src_pad, tgt, tgt_pad = batch()
    logits, trace = ours(src, tgt, src_pad, tgt_pad, trace=True)
    assert logits.shape == (3, 6, V)
    torch.testing.assert_close(ours(src, tgt, src_pad, tgt_pad), logits, atol=1e-5, rtol=0)
    assert [(m.kind, m.layer) for m in trace.attention_of("encoder")] == [("encoder", 0), ("encoder", 1)]
    for kind, shape in [("encoder", (3, 4, 7, 7)), ("decoder", (3, 4, 6, 6)), ("cross", (3, 4, 6, 7))]:
        maps = trace.attention_of(kind)
        assert len(maps) == 2 and all(m.weights.shape == shape for m in maps)
        for m in maps:
            torch.testing.assert_close(m.weights.sum(-1), torch.ones(shape[:3]))
            if kind != "decoder":  # source padding gets no attention
                assert (m.weights[1, :, :, 5:] == 0).all()
    for m in trace.attention_of("decoder"):
        assert (m.weights[..., torch.ones(6, 6, dtype=torch.bool).triu(1)] == 0).all()
    assert sorted(trace.hidden) == ["decoder.layer0", "decoder.layer1", "encoder.layer0", "encoder.layer1"]
    assert trace.hidden["encoder.layer1"][0].shape == (3, 7, 32)
    # block outputs stay in the graph: gradient norm per layer
    hidden = [trace.hidden[name][0] for name in sorted(trace.hidden)]
    grads = torch.autograd.grad(F.cross_entropy(logits.flatten(0, 1), tgt.flatten()), hidden)
    assert all(g.shape == h.shape and g.norm() > 0 for g, h in zip(grads, hidden))


@pytest.mark.parametrize("family, kind", [("gpt", "decoder"), ("bert", "encoder")])
def test_lm_traces(family, kind):
    ours = model(family)
    tokens = batch()[2]
    logits, trace = ours(tokens, trace=True)
    assert logits.shape == (3, 6, V)
    assert [(m.kind, m.layer) for m in trace.attention] == [(kind, 0), (kind, 1)]
    assert sorted(trace.hidden) == [f"{kind}.layer0", f"{kind}.layer1"]
    upper = torch.ones(6, 6, dtype=torch.bool).triu(1)
    for m in trace.attention:
        assert m.weights.shape == (3, 4, 6, 6)
        torch.testing.assert_close(m.weights.sum(-1), torch.ones(3, 4, 6))
        assert (m.weights[..., upper] == 0).all() == (family == "gpt")


def test_gpt_is_causal_and_bert_is_not():
    tokens = batch()[2]
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % V
    gpt, bert = model("gpt"), model("bert")
    torch.testing.assert_close(gpt(changed)[:, :-1], gpt(tokens)[:, :-1], atol=1e-6, rtol=0)
    assert not torch.allclose(bert(changed)[:, :-1], bert(tokens)[:, :-1], atol=1e-4)


def test_lm_pad_mask():
    tokens = batch()[2]
    pad = torch.zeros(3, 6, dtype=torch.bool)
    pad[0, :2] = True  # left padding in a GPT: the first rows attend to nothing but padding
    for family in ("gpt", "bert"):
        logits, trace = model(family)(tokens, pad_mask=pad, trace=True)
        assert torch.isfinite(logits).all()
        for m in trace.attention:
            assert (m.weights[0, :, 2:, :2] == 0).all()


def decode_step_by_step(ours, tokens, state):
    logits, attention = [], []
    for t in range(tokens.size(1)):
        step_logits, state, attn = ours.step(tokens[:, t], state)
        logits.append(step_logits)
        attention.append(attn)
    return torch.stack(logits, dim=1), attention, state


@pytest.mark.parametrize("positional, norm_first", ALL_KINDS)
def test_transformer_incremental_decoding_equals_forward(positional, norm_first):
    ours = model("transformer", positional=positional, norm_first=norm_first)
    src, src_pad, tgt, _ = batch()
    expected, trace = ours(src, tgt, src_pad, trace=True)
    state = ours.start(src, src_pad)
    logits, attention, _ = decode_step_by_step(ours, tgt, state)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=0)
    assert attention[0].shape == (3, 2, 4, 7)  # (B, L, H, Ts)
    cross = torch.stack([m.weights for m in trace.attention_of("cross")], dim=1)  # (B, L, H, T, Ts)
    torch.testing.assert_close(torch.stack(attention, dim=3), cross, atol=1e-5, rtol=0)


@pytest.mark.parametrize("positional, norm_first", ALL_KINDS)
def test_gpt_incremental_decoding_equals_forward(positional, norm_first):
    ours = model("gpt", positional=positional, norm_first=norm_first)
    tokens = torch.randint(0, V, (2, 12), generator=torch.Generator().manual_seed(3))
    logits, attention, state = decode_step_by_step(ours, tokens, ours.start(batch_size=2))
    torch.testing.assert_close(logits, ours(tokens), atol=1e-5, rtol=0)
    assert attention[0] is None
    with pytest.raises(ValueError, match="max_len"):
        ours.step(tokens[:, 0], state)


def test_decoding_state_reorders_for_beam_search_and_is_not_mutated():
    ours = model("transformer")
    src, src_pad, tgt, _ = batch()
    state = ours.start(src, src_pad)
    _, state, _ = ours.step(tgt[:, 0], state)
    snapshot = reorder_state(state, torch.arange(3))
    index = torch.tensor([2, 2, 0])
    logits, _, attn = ours.step(tgt[:, 1], state)
    reordered_logits, _, reordered_attn = ours.step(tgt[index, 1], reorder_state(state, index))
    torch.testing.assert_close(reordered_logits, logits[index], atol=1e-6, rtol=0)
    torch.testing.assert_close(reordered_attn, attn[index], atol=1e-6, rtol=0)
    for before, after in zip(snapshot["layers"], state["layers"]):
        assert before["self"]["k"].shape == after["self"]["k"].shape == (3, 4, 1, 8)
    assert state["position"].tolist() == [1, 1, 1]


def test_gpt_start_rejects_a_source():
    with pytest.raises(ValueError, match="no source"):
        model("gpt").start(torch.zeros(1, 3, dtype=torch.long))


def test_forward_past_max_len_raises():
    with pytest.raises(ValueError, match="max_len"):
        model("bert")(torch.zeros(1, 13, dtype=torch.long))


@pytest.mark.parametrize("family", ["transformer", "gpt", "bert"])
def test_weight_tying(family):
    tied = model(family, tie_weights=True)
    untied = model(family, tie_weights=False)
    embedding = tied.tgt_embed if family == "transformer" else tied.embed
    assert tied.lm_head.weight is embedding.token.weight
    untied_embedding = untied.tgt_embed if family == "transformer" else untied.embed
    assert untied.lm_head.weight.data_ptr() != untied_embedding.token.weight.data_ptr()
    assert "lm_head.weight" in dict(untied.named_parameters())
    assert "lm_head.weight" not in dict(tied.named_parameters())  # one parameter, listed once


def test_bert_output_and_dropout():
    ours = model("bert", dropout=0.3)
    tokens = batch()[2]
    assert isinstance(ours, BERT) and ours(tokens).shape == (3, 6, V)
    torch.testing.assert_close(ours(tokens), ours(tokens))  # eval: deterministic
    ours.train()
    assert not torch.allclose(ours(tokens), ours(tokens))


def test_families_build_their_classes():
    assert isinstance(model("transformer"), Transformer)
    assert isinstance(model("gpt"), GPT)
    assert model("gpt").config.family == "gpt"


def test_a_few_steps_of_training_fit_a_copy_task():
    torch.manual_seed(0)
    ours = build_model(config("transformer", src_vocab_size=V, d_model=16, d_ff=32, num_layers=1)).train()
    src = torch.randint(5, V, (8, 5))
    tgt_in = torch.cat([torch.ones(8, 1, dtype=torch.long), src], dim=1)  # [<bos>] + tokens
    tgt_out = torch.cat([src, torch.full((8, 1), 2)], dim=1)  # tokens + [<eos>]
    optimizer = torch.optim.Adam(ours.parameters(), lr=1e-2)
    losses = []
    for _ in range(40):
        loss = F.cross_entropy(ours(src, tgt_in).flatten(0, 1), tgt_out.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


@pytest.mark.parametrize("family", ["transformer", "gpt", "bert"])
def test_untraced_forward_uses_fused_attention_only(family, monkeypatch):
    ours = model(family)
    src, _, tgt, _ = batch()
    inputs = (src, tgt) if family == "transformer" else (tgt,)
    calls = []
    fused = F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(kwargs.get("is_causal"))
        return fused(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counting)
    ours(*inputs)
    attention_layers = 6 if family == "transformer" else 2  # encoder self, decoder self and cross
    assert len(calls) == attention_layers
    assert calls.count(True) == (2 if family in ("transformer", "gpt") else 0)  # SDPA's causal kernel
    calls.clear()
    ours(*inputs, trace=True)
    assert calls == []  # traced: attention written out, weights kept
