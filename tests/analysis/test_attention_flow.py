"""Attention flow (explorer.analysis.attention_flow) against max-flow = min-cut by brute force
(every cut of the layered graph enumerated) and a one-layer row written out here."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
import torch

from explorer.analysis.attention_flow import (
    CROSS_NOTE,
    MAX_TOKENS,
    attention_flow,
    flow_stack,
)
from explorer.analysis.attribution import Cancelled
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=64)


def _residual(weights, reduce=lambda w: w.mean(0)):
    """The paper's edge capacities: heads fused, + I, rows renormalised."""
    a = reduce(weights) + np.eye(weights.shape[-1])
    return a / a.sum(-1, keepdims=True)


def _min_cut(capacities, source, sink):
    """Max-flow by the max-flow min-cut theorem: the lightest of every s-t cut, enumerated."""
    nodes = sorted({u for u, _ in capacities} | {v for _, v in capacities})
    free = [n for n in nodes if n not in (source, sink)]
    best = float("inf")
    for chosen in itertools.product((False, True), repeat=len(free)):
        side = {source} | {n for n, c in zip(free, chosen) if c}
        best = min(best, sum(c for (u, v), c in capacities.items() if u in side and v not in side))
    return best


def _brute_force_flow(layers, reduce=lambda w: w.mean(0)):
    size, depth = layers[0].shape[-1], len(layers)
    capacities = {((l + 1, i), (l, j)): c for l, w in enumerate(layers)
                  for (i, j), c in np.ndenumerate(_residual(w, reduce))}
    flows = np.array([[_min_cut(capacities, (depth, i), (0, j)) for j in range(size)] for i in range(size)])
    return flows / flows.sum(-1, keepdims=True)


def test_a_hand_built_two_layer_graph_equals_the_min_cut():
    """Two heads, two layers, three tokens: flow is the bottleneck, not rollout's product."""
    rng = np.random.default_rng(0)
    layers = [rng.dirichlet(np.ones(3), size=(2, 3)) for _ in range(2)]  # (H, T, T) rows sum to 1
    flow = flow_stack(layers)
    np.testing.assert_allclose(flow, _brute_force_flow(layers), atol=1e-9)
    assert (flow >= 0).all()
    np.testing.assert_allclose(flow.sum(1), 1.0)
    rolled = _residual(layers[1]) @ _residual(layers[0])
    assert not np.allclose(flow, rolled)  # a different method from rollout, not a copy of it
    maxed = flow_stack(layers, "max")
    np.testing.assert_allclose(maxed, _brute_force_flow(layers, lambda w: w.max(0)), atol=1e-9)


def test_one_layer_is_the_residual_attention_row():
    """A single layer has one path per pair, the edge: its capacity, rows already summing to 1."""
    weights = np.random.default_rng(1).dirichlet(np.ones(5), size=(4, 5))  # (H, T, T)
    np.testing.assert_allclose(flow_stack([weights], "min"), _residual(weights, lambda w: w.min(0)),
                               atol=1e-9)


def test_a_causal_stack_flows_only_to_earlier_tokens():
    rng = np.random.default_rng(2)
    layers = []
    for _ in range(2):
        weights = np.tril(rng.random((2, 4, 4)))
        layers.append(weights / weights.sum(-1, keepdims=True))
    flow = flow_stack(layers)
    assert np.all(np.triu(flow, 1) == 0) and flow[0, 0] == pytest.approx(1.0)
    np.testing.assert_allclose(flow, _brute_force_flow(layers), atol=1e-9)


def test_a_transformer_stack_equals_the_min_cut_of_its_traced_attention(transformer):
    progress = []
    result = attention_flow(transformer, "abc", "cba", progress=progress.append)
    assert [m.name for m in result.maps] == ["encoder", "decoder"] and result.method == "flow"
    assert result.note == CROSS_NOTE and progress[-1] == pytest.approx(1.0)
    model = transformer.model.eval()
    from explorer.analysis.attribution_input import attribution_input

    item = attribution_input(transformer, "abc", "cba")
    with torch.no_grad():
        _, trace = model(*item.inputs, trace=True)
    encoder = [m.weights[0].double().numpy() for m in sorted(trace.attention_of("encoder"), key=lambda m: m.layer)]
    np.testing.assert_allclose(result.maps[0].matrix, _brute_force_flow(encoder), atol=1e-6)
    assert result.maps[0].rows == item.sides[0].labels


def test_rnn_too_long_stop_and_missing_networkx_are_one_line(transformer, monkeypatch):
    rnn = build_workspace(DataSpec(task="copy", n_train=8, n_val=2), "seq2seq", seed=0, cell="gru",
                          embed_dim=8, hidden_size=8)
    result = attention_flow(rnn, "abc", "abc")
    assert not result.maps and "attention flow is not defined for an RNN" in result.reason
    with pytest.raises(UserError, match=f"at most {MAX_TOKENS} tokens") as caught:
        attention_flow(transformer, "ab" * MAX_TOKENS, "ba")
    assert "\n" not in str(caught.value)
    with pytest.raises(Cancelled):
        attention_flow(transformer, "abc", "cba", should_stop=lambda: True)
    monkeypatch.setitem(sys.modules, "networkx", None)  # not installed: the import fails
    with pytest.raises(UserError, match="needs networkx"):
        attention_flow(transformer, "abc", "cba")


def test_explain_routes_flow_and_the_training_probe_leaves_it_to_a_pause(transformer):
    from explorer.analysis.explain import (
        FLOW_NOT_LIVE,
        ExplainRequest,
        LiveSchedule,
        explain,
    )
    from explorer.analysis.probe_input import ProbeInput

    request = ExplainRequest("flow", fusion="min")
    result = explain(transformer, "abc", "cba", request)
    np.testing.assert_allclose(result.maps[0].matrix, attention_flow(transformer, "abc", "cba", "min").maps[0].matrix)
    probe = ProbeInput("abc", "cba")
    probe.explanation = request
    live = LiveSchedule()(transformer, probe, "abc", "cba")
    assert live.result is None and live.message == FLOW_NOT_LIVE
