"""Integrated gradients run to a tolerance (nested Clenshaw-Curtis rules) and every output token from
shared forward passes: against quadrature moments, a node-by-node autograd reference and the
explorer's attributions of each token alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.analysis.attribution import AttributionSettings, attribute, attribute_item
from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.ig_tolerance import clenshaw_curtis, levels
from explorer.training import DataSpec, build_workspace
from seqmodels.config import PAD_ID
from tests.attribution_reference import embedding_forward


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=64)


@pytest.fixture(scope="module")
def gru():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="copy", n_train=32, n_val=4), "seq2seq", seed=0, cell="gru",
                           attention="additive", embed_dim=8, hidden_size=12)


def _modules(workspace):
    model = workspace.model
    if model.config.family == "seq2seq":
        return [model.src_embedding, model.tgt_embedding]
    return [model.src_embed.token, model.tgt_embed.token]


def _moment_weights(nodes: np.ndarray) -> np.ndarray:
    """The interpolatory rule on these nodes: weights integrating exactly the Legendre polynomials
    P_k(2x - 1), k < len(nodes), over [0, 1] (1 for k = 0, else 0; a well-conditioned basis)."""
    basis = np.polynomial.legendre.legvander(2 * nodes - 1, len(nodes) - 1)  # (nodes, k)
    moments = np.zeros(len(nodes))
    moments[0] = 1.0
    return np.linalg.solve(basis.T, moments)


@pytest.mark.parametrize("intervals", [4, 8, 16])
def test_clenshaw_curtis_is_the_interpolatory_rule_on_nested_nodes(intervals):
    nodes, weights = clenshaw_curtis(intervals)
    np.testing.assert_allclose(nodes, (1 - np.cos(np.pi * np.arange(intervals + 1) / intervals)) / 2)
    np.testing.assert_allclose(weights, _moment_weights(nodes), atol=1e-9)
    coarse, _ = clenshaw_curtis(intervals // 2) if intervals > 4 else (nodes[::2], None)
    np.testing.assert_allclose(nodes[::2], coarse, atol=1e-15)  # every node of the coarser rule kept


def _reference_ig(workspace, item, row, points: int) -> tuple[np.ndarray, float]:
    """Integrated gradients of one row on the Clenshaw-Curtis rule with `points` nodes, node by
    node with autograd (the moment-derived weights), and its completeness gap."""
    modules = _modules(workspace)
    model = workspace.model.eval()
    forward = embedding_forward(model, item.inputs, modules, row.position, row.token_id)
    with torch.no_grad():
        x = [m(t) for m, t in zip(modules, item.inputs)]
        b = [m(torch.full_like(t, PAD_ID)) for m, t in zip(modules, item.inputs)]
        change = forward(*x).item() - forward(*b).item()
    nodes = (1 - np.cos(np.pi * np.arange(points) / (points - 1))) / 2
    weights = _moment_weights(nodes)
    total = np.zeros(sum(t.size(1) for t in item.inputs))
    for alpha, weight in zip(nodes, weights):
        point = [(bb + alpha * (xx - bb)).requires_grad_() for xx, bb in zip(x, b)]
        grads = torch.autograd.grad(forward(*point).sum(), point)
        total += weight * np.concatenate([(g * (xx - bb)).sum(-1)[0].detach().numpy()
                                          for g, xx, bb in zip(grads, x, b)])
    return total, total.sum() - change


# tolerances at which some rows need more than the first rule: the GRU's path is smooth (fast
# convergence), the Transformer's ReLUs put kinks on it (slower)
@pytest.mark.parametrize("name, tolerance", [("transformer", 1e-2), ("gru", 1e-4)])
def test_tolerance_mode_stops_at_the_first_rule_within_the_gap(name, tolerance, request):
    workspace = request.getfixturevalue(name)
    item = attribution_input(workspace, "abcab", "abcab")
    result = attribute_item(workspace.model, item, AttributionSettings(method="ig", tolerance=tolerance,
                                                                       batch_size=6))
    rules = [n + 1 for n in levels(AttributionSettings().max_steps)]
    assert max(result.row_steps) > rules[0]  # the doubling was exercised
    for r, row in enumerate(item.rows):
        steps = int(result.row_steps[r])
        assert steps in rules
        expected, gap = _reference_ig(workspace, item, row, steps)
        np.testing.assert_allclose(np.nan_to_num(result.scores[r]), expected, atol=1e-6)
        change = abs(result.target[r] - result.baseline_target[r])
        assert abs(result.gap[r]) <= tolerance * change
        assert result.gap[r] == pytest.approx(gap, abs=1e-6)
        if steps > rules[0]:  # the rule before it was not yet within the tolerance
            _, before = _reference_ig(workspace, item, row, rules[rules.index(steps) - 1])
            assert abs(before) > tolerance * change
    assert result.steps == max(result.row_steps)
    assert result.warning is None
    document = result.to_dict()
    assert document["tolerance"] == tolerance
    assert [entry["steps"] for entry in document["outputs"]] == result.row_steps.tolist()


def test_tolerance_mode_cap_is_reported_when_not_reached(transformer):
    settings = AttributionSettings(method="ig", tolerance=1e-9, max_steps=9)
    result = attribute(transformer, "abcab", "abcab", settings)
    assert set(result.row_steps.tolist()) <= {5, 9}
    assert result.relative_gap.max() > 1e-9
    assert "was not reached in 9 steps" in result.warning


@pytest.mark.parametrize("name", ["transformer", "gru"])
@pytest.mark.parametrize("settings", [
    AttributionSettings(method="ig", steps=12, batch_size=5),
    AttributionSettings(method="ig", tolerance=1e-3, batch_size=4),
    AttributionSettings(method="saliency"),
    AttributionSettings(method="grad-input"),
])
def test_all_tokens_from_shared_passes_equal_each_token_alone(name, settings, request):
    workspace = request.getfixturevalue(name)
    every = attribute(workspace, "abcab", "abcab", settings)
    assert len(every.rows) > 3
    for r in range(len(every.rows)):
        alone = attribute(workspace, "abcab", "abcab", settings, rows=[r])
        np.testing.assert_allclose(every.scores[r], alone.scores[0], atol=1e-6, rtol=1e-5)
        if every.gap is not None:
            assert every.row_steps[r] == alone.row_steps[0]
            assert every.gap[r] == pytest.approx(alone.gap[0], abs=1e-6)
