"""Sampling with temperature, top-k and top-p: the truncated distribution and the draws from it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import TableModel
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.decoding import greedy, sample, truncated_distribution
from explorer.decoding.scoring import score_ids
from seqmodels.config import BOS_ID

SOURCE = [5, 6, 2]


def reference_distribution(logits, temperature, top_k, top_p):
    """Straight from the definitions, in numpy: softmax(z/T), keep the k best, renormalise, then
    keep the smallest best-first set with mass >= p, renormalise."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    probs = np.exp(z - z.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    if top_k > 0:
        order = order[:top_k]
    kept = probs[order] / probs[order].sum()
    if top_p < 1:
        size = 1
        while kept[:size].sum() < top_p:
            size += 1
        order, kept = order[:size], kept[:size] / kept[:size].sum()
    return order, kept


@settings(max_examples=60, deadline=None)
@given(
    logits=st.lists(st.floats(-5, 5), min_size=2, max_size=12, unique=True),
    temperature=st.sampled_from([0.3, 1.0, 2.5]),
    top_k=st.integers(0, 6),
    top_p=st.sampled_from([0.2, 0.5, 0.9, 1.0]),
)
def test_truncated_distribution_matches_definition(logits, temperature, top_k, top_p):
    ids, probs = truncated_distribution(torch.tensor(logits, dtype=torch.float64), temperature,
                                        top_k, top_p)
    ref_ids, ref_probs = reference_distribution(logits, temperature, top_k, top_p)
    assert ids.tolist() == ref_ids.tolist()
    np.testing.assert_allclose(probs.numpy(), ref_probs, atol=1e-9)
    assert probs.sum().item() == pytest.approx(1.0)


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError):
        truncated_distribution(torch.zeros(4), 0.0, 0, 1.0)
    with pytest.raises(ValueError):
        truncated_distribution(torch.zeros(4), 1.0, 0, 0.0)


def test_sampling_is_seeded_and_top_k_one_is_greedy():
    model = TableModel(vocab_size=8, seed=1, sharpness=0.7)
    first = sample(model, SOURCE, seed=3, max_len=10).hypothesis.token_ids
    assert sample(model, SOURCE, seed=3, max_len=10).hypothesis.token_ids == first
    draws = {tuple(sample(model, SOURCE, seed=s, max_len=10).hypothesis.token_ids) for s in range(8)}
    assert len(draws) > 1
    assert sample(model, SOURCE, top_k=1, seed=5, max_len=10).hypothesis.token_ids == (
        greedy(model, SOURCE, max_len=10).token_ids
    )


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (0.7, 3, 1.0), (1.5, 0, 0.8)])
def test_recorded_distributions_and_scores(temperature, top_k, top_p):
    model = TableModel(vocab_size=8, seed=2, sharpness=0.7)
    result = sample(model, SOURCE, temperature=temperature, top_k=top_k, top_p=top_p, seed=0,
                    max_len=8)
    hyp = result.hypothesis
    assert len(result.steps) == len(hyp.token_ids)
    src = torch.tensor([SOURCE])
    tgt_in = torch.tensor([[BOS_ID] + hyp.token_ids[:-1]])
    with torch.no_grad():
        logits = model(src, tgt_in)[0]  # (T, V) teacher-forced
    for position, drawn in enumerate(result.steps):
        ids, probs = truncated_distribution(logits[position], temperature, top_k, top_p)
        assert drawn.token_ids.tolist() == ids.tolist()
        np.testing.assert_allclose(drawn.probs, probs.numpy(), atol=1e-9)
        assert drawn.chosen == hyp.token_ids[position] and drawn.chosen in drawn.token_ids
    # the score is the model's own log-likelihood, whatever the truncation
    assert hyp.score == pytest.approx(score_ids(model, SOURCE, hyp.token_ids).total, abs=1e-6)


def test_draws_follow_the_truncated_distribution():
    model = TableModel(vocab_size=6, seed=4, sharpness=0.5)
    generator = torch.Generator().manual_seed(0)
    draws = [
        sample(model, SOURCE, top_p=0.7, generator=generator, max_len=1).steps[0]
        for _ in range(1500)
    ]
    support, probs = draws[0].token_ids, draws[0].probs
    counts = np.array([sum(d.chosen == t for d in draws) for t in support]) / len(draws)
    np.testing.assert_allclose(counts, probs, atol=0.04)
    assert set(d.chosen for d in draws) <= set(support.tolist())
