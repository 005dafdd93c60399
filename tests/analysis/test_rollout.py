"""Attention rollout (explorer.analysis.rollout) against the paper's formula written out here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.analysis.rollout import RNN_REASON, rollout
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=3, d_ff=32, dropout=0.0, max_len=64)


def _weights(model, src, tgt):
    with torch.no_grad():
        _, trace = model.eval()(src, tgt, trace=True)
    by_kind = {}
    for m in trace.attention:
        by_kind.setdefault(m.kind, {})[m.layer] = m.weights[0].double()  # (H, Tq, Tk)
    return {kind: [layers[k] for k in sorted(layers)] for kind, layers in by_kind.items()}


def _paper(layers, reduce):
    """Abnar & Zuidema: A = W_att + I, rows renormalised, Ã_l = A_l · Ã_(l-1), Ã_0 = I."""
    rolled = torch.eye(layers[0].shape[-1], dtype=torch.float64)
    for weights in layers:
        a = reduce(weights) + torch.eye(weights.shape[-1], dtype=torch.float64)
        rolled = (a / a.sum(-1, keepdim=True)) @ rolled
    return rolled


REDUCE = {"mean": lambda w: w.mean(0), "max": lambda w: w.max(0).values, "min": lambda w: w.min(0).values}


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
def test_rollout_equals_the_formula_and_rows_sum_to_one(transformer, fusion):
    result = rollout(transformer, "abcd", "dcba", fusion)
    maps = {m.name: m for m in result.maps}
    src = torch.tensor([transformer.src_tokenizer.encode("abcd") + [2]])
    tgt = torch.tensor([[1] + transformer.tokenizer.encode("dcba")])
    weights = _weights(transformer.model, src, tgt)
    reduce = REDUCE[fusion]
    encoder = _paper(weights["encoder"], reduce)
    np.testing.assert_allclose(maps["encoder"].matrix, encoder.numpy(), atol=1e-6)
    np.testing.assert_allclose(maps["decoder"].matrix, _paper(weights["decoder"], reduce).numpy(), atol=1e-6)
    # the decoder's path to the source: each layer's self-attention (with its residual), then
    # half the residual and half the cross-attention onto the encoder's rollout
    T, S = tgt.size(1), src.size(1)
    joint = torch.cat([torch.zeros(T, S, dtype=torch.float64), torch.eye(T, dtype=torch.float64)], 1)
    for self_w, cross_w in zip(weights["decoder"], weights["cross"]):
        a = reduce(self_w) + torch.eye(T, dtype=torch.float64)
        joint = (a / a.sum(-1, keepdim=True)) @ joint
        c = reduce(cross_w)
        c = c / c.sum(-1, keepdim=True)
        joint = 0.5 * joint + 0.5 * torch.cat([c @ encoder, torch.zeros(T, T, dtype=torch.float64)], 1)
    np.testing.assert_allclose(maps["decoder → source"].matrix, joint.numpy(), atol=1e-6)
    for m in result.maps:
        np.testing.assert_allclose(m.matrix.sum(1), 1.0, atol=1e-9)
    assert maps["decoder → source"].columns[:S] == maps["encoder"].columns


def test_rnn_says_why_in_one_line():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="copy", n_train=8, n_val=2), "seq2seq", seed=0,
                                embed_dim=8, hidden_size=12)
    result = rollout(workspace, "abc", "abc")
    assert result.maps == [] and result.reason == RNN_REASON and "\n" not in RNN_REASON


def test_unknown_fusion_is_a_user_error(transformer):
    with pytest.raises(UserError, match="unknown head fusion"):
        rollout(transformer, "abc", "cba", "median")
