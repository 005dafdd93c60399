"""The activation provider for plain torch modules, on the hand-written models: names, values
against torch's own modules, replacement, gradients, and the model left as it was."""

from __future__ import annotations

import math

import pytest
import torch

from explorer.analysis.activations import list_points, provider_for, run_with
from explorer.analysis.activations.providers.torch_modules import dotted_names
from explorer.usermodel.adapter import Adapter
from explorer.usermodel.loader import make_workspace
from tests.usermodel import homework_gpt, homework_seq2seq

SRC = torch.tensor([[4, 5, 6, 7, 2]])
TGT_IN = torch.tensor([[1, 8, 9, 10]])


@pytest.fixture
def seq2seq():
    model, vocab = homework_seq2seq.build()
    return make_workspace(model.eval(), vocab).model


def _untouched(model):
    return all(not m._forward_hooks and not m._forward_pre_hooks and "forward" not in vars(m)
               for m in model.modules())


def test_seq2seq_points_equal_torch_modules(seq2seq):
    inner = seq2seq.inner
    names = [p.name for p in list_points(seq2seq, (SRC, TGT_IN))]
    assert names[0] == "encoder.hook_embed" and "encoder.rnn.l0.fwd.hook_h" in names
    assert {"decoder.rnn.l0.fwd.hook_gate_f", "decoder.blocks.0.cross_attn.hook_pattern",
            "decoder.blocks.0.cross_attn.hook_z", "decoder.hook_out"} <= set(names)
    run = run_with(seq2seq, (SRC, TGT_IN), read=["encoder.rnn.l0.fwd.hook_h", "encoder.rnn.l0.fwd.hook_c",
                                                "decoder.blocks.0.cross_attn.hook_pattern"])
    with torch.no_grad():
        memory, (h, c) = inner.encoder(inner.embed(SRC))
        decoded, _ = inner.decoder(inner.embed(TGT_IN), (h, c))
        _, weights = inner.attention(decoded, memory, memory, average_attn_weights=False)
        logits = inner(SRC, TGT_IN)
    assert torch.allclose(run.values["encoder.rnn.l0.fwd.hook_h"], memory, atol=1e-6)
    assert torch.allclose(run.values["encoder.rnn.l0.fwd.hook_c"][:, -1], c[0], atol=1e-6)
    assert torch.allclose(run.values["decoder.blocks.0.cross_attn.hook_pattern"], weights, atol=1e-6)
    assert torch.allclose(run.logits, logits, atol=1e-5)  # computed here, the same numbers
    assert dotted_names(seq2seq)["decoder.blocks.0.cross_attn"] == "attention"
    assert dotted_names(seq2seq)["encoder.rnn.l0"] == "encoder"
    assert _untouched(inner)


def test_zeroing_a_head_equals_the_attention_without_it(seq2seq):
    inner = seq2seq.inner

    def zero_head(z):  # (B, T, H, Dh)
        z = z.clone()
        z[:, :, 1] = 0
        return z

    run = run_with(seq2seq, (SRC, TGT_IN), replace={"decoder.blocks.0.cross_attn.hook_z": zero_head})
    with torch.no_grad():  # the same by hand: head 1's share of the output projection removed
        memory, state = inner.encoder(inner.embed(SRC))
        decoded, _ = inner.decoder(inner.embed(TGT_IN), state)
        dim, heads = inner.attention.embed_dim, inner.attention.num_heads
        w_q, w_k, w_v = inner.attention.in_proj_weight.split(dim)
        b_q, b_k, b_v = inner.attention.in_proj_bias.split(dim)
        split = lambda x: x.view(1, -1, heads, dim // heads).transpose(1, 2)  # (1, H, T, Dh)
        q, k, v = split(decoded @ w_q.T + b_q), split(memory @ w_k.T + b_k), split(memory @ w_v.T + b_v)
        z = (torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dim // heads), -1) @ v)
        z[:, 1] = 0
        context = inner.attention.out_proj(z.transpose(1, 2).reshape(1, -1, dim))
        expected = inner.out(torch.cat([decoded, context], dim=-1))
    assert torch.allclose(run.logits, expected, atol=1e-5)


def test_gradients_per_time_step_reach_the_recurrent_states(seq2seq):
    run = run_with(seq2seq, (SRC, TGT_IN), grad=["encoder.rnn.l0.fwd.hook_h"])
    grads = run.gradients(run.logits[0, -1, 2])["encoder.rnn.l0.fwd.hook_h"]
    assert grads.shape == (1, 5, 16) and grads.abs().sum() > 0


@pytest.mark.parametrize("kind", ["layers", "sdpa"])
def test_gpt_points_and_embeddings(kind):
    model, vocab = homework_gpt.build(kind)
    wrapped = make_workspace(model, vocab, Adapter(split="chars")).model
    ids = torch.tensor([[4, 5, 6, 12, 7]])
    run = run_with(wrapped, (ids,), read=["*.hook_pattern", "*.hook_resid_post", "*.hook_embed"])
    patterns = [run.values[f"decoder.blocks.{k}.attn.hook_pattern"] for k in range(2)]
    for pattern in patterns:  # causal rows that sum to one
        assert pattern.shape == (1, 2, 5, 5)
        assert torch.allclose(pattern.sum(-1), torch.ones(1, 2, 5))
        assert torch.all(pattern.triu(1) == 0)
    with torch.no_grad():
        assert torch.allclose(run.logits, model(ids), atol=1e-5)
        expected_embed = model.tokens(ids) + model.positions(torch.arange(5))
    if kind == "layers":  # torch's layers are the blocks: what the first receives is the embedding
        assert torch.allclose(run.values["decoder.hook_embed"], expected_embed)
        assert len([n for n in run.values if n.endswith("hook_resid_post")]) == 2
    else:  # modules of the user's own: only their attention is known
        assert not any(n.endswith(("hook_embed", "hook_resid_post")) for n in run.values)
    assert dotted_names(wrapped)["decoder.blocks.1.attn"] == (
        "blocks.1.self_attn" if kind == "layers" else "attn.1")
    embeddings = provider_for(wrapped).embeddings(wrapped)
    assert embeddings["input"] is model.tokens.weight and embeddings["output"] is model.lm_head.weight
    assert _untouched(model)
