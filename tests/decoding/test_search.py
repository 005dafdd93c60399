"""Greedy and beam search on table models, checked by brute force and against teacher forcing."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from conftest import TableModel
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.decoding import beam_search, beam_search_batch, greedy, greedy_batch, length_penalty
from explorer.decoding.scoring import score_ids
from seqmodels.config import BOS_ID, EOS_ID

SOURCES = [[5, 6, 2], [3, 2], [6, 6, 5, 4, 2]]


@torch.no_grad()
def sequence_logprob(model, source, ids):
    """Independent reference: sum of log-softmaxed table lookups along the sequence."""
    bias = model.src_embedding[source].sum(0)  # (V,)
    previous, total = BOS_ID, 0.0
    for position, token in enumerate(ids):
        logits = (model.table[position, previous] + bias).double()
        total += float(torch.log_softmax(logits, -1)[token])
        previous = token
    return total


def brute_force_best(model, source, max_len, alpha):
    """argmax over every sequence: <eos>-terminated within max_len, or max_len tokens without."""
    vocab = model.config.vocab_size
    best = (-math.inf, None)
    with torch.no_grad():
        for length in range(1, max_len + 1):
            for body in itertools.product([t for t in range(vocab) if t != EOS_ID], repeat=length - 1):
                endings = [EOS_ID] + ([t for t in range(vocab) if t != EOS_ID] if length == max_len else [])
                for last in endings:
                    ids = [*body, last]
                    value = sequence_logprob(model, source, ids) / length_penalty(length, alpha)
                    best = max(best, (value, ids))
    return best


def test_length_penalty_is_gnmt():
    assert length_penalty(7, 0.0) == 1.0
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx((12 / 6) ** 0.6)


@pytest.mark.parametrize("seed,alpha", [(0, 0.0), (1, 0.0), (2, 1.0), (3, 0.6), (4, -0.5)])
def test_wide_beam_finds_exhaustive_argmax(seed, alpha):
    model = TableModel(vocab_size=4, seed=seed, sharpness=1.0)
    max_len = 4
    width = 4**max_len  # at least V^T: nothing can be pruned
    for source in SOURCES[:2]:
        value, ids = brute_force_best(model, source, max_len, alpha)
        result = beam_search(model, source, beam_size=width, alpha=alpha, max_len=max_len)
        assert result.best.token_ids == ids
        assert result.best.normalized_score == pytest.approx(value, abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), vocab=st.integers(3, 5), max_len=st.integers(1, 3),
       alpha=st.sampled_from([0.0, 0.6, 2.0]), sharpness=st.sampled_from([0.5, 3.0]))
def test_exhaustive_argmax_property(seed, vocab, max_len, alpha, sharpness):
    model = TableModel(vocab_size=vocab, seed=seed, sharpness=sharpness)
    value, ids = brute_force_best(model, SOURCES[0], max_len, alpha)
    result = beam_search(model, SOURCES[0], beam_size=vocab**max_len, alpha=alpha, max_len=max_len)
    assert result.best.normalized_score == pytest.approx(value, abs=1e-9)
    assert result.best.token_ids == ids


@pytest.mark.parametrize("seed", range(6))
def test_beam_width_one_equals_greedy(seed):
    model = TableModel(vocab_size=6, seed=seed)
    for source in SOURCES:
        path = greedy(model, source, max_len=10)
        result = beam_search(model, source, beam_size=1, max_len=10)
        assert result.best.token_ids == path.token_ids
        assert result.best.score == pytest.approx(path.score, abs=1e-12)
        assert result.greedy.token_ids == path.token_ids


@pytest.mark.parametrize("alpha", [0.0, 0.8])
def test_scores_equal_teacher_forced_loglikelihood(alpha):
    model = TableModel(vocab_size=6, seed=3)
    for source in SOURCES:
        result = beam_search(model, source, beam_size=4, alpha=alpha, max_len=8)
        for hyp in result.nbest + [result.greedy]:
            forced = score_ids(model, source, hyp.token_ids)
            reference = sequence_logprob(model, source, hyp.token_ids)
            assert hyp.score == pytest.approx(forced.total, abs=1e-6)
            assert hyp.score == pytest.approx(reference, abs=1e-6)
            np.testing.assert_allclose(hyp.token_logprobs, forced.logprobs, atol=1e-6)
            lp = length_penalty(len(hyp.token_ids), alpha)
            assert hyp.normalized_score == pytest.approx(hyp.score / lp)


def test_nbest_is_sorted_and_tree_is_consistent():
    model = TableModel(vocab_size=7, seed=5)
    k = 3
    result = beam_search(model, SOURCES[2], beam_size=k, alpha=0.6, max_len=9, nbest=3)
    normalized = [h.normalized_score for h in result.nbest]
    assert normalized == sorted(normalized, reverse=True) and len(normalized) == 3
    root = result.nodes[0]
    assert root.parent is None and root.step == -1 and root.token_id == BOS_ID
    steps = {}
    for node in result.nodes[1:]:
        parent = result.nodes[node.parent]
        assert node.step == parent.step + 1
        assert parent.status == "kept", "only live hypotheses are expanded"
        assert node.score == parent.score + node.logprob  # exactly, float64 throughout
        assert node.status in ("kept", "pruned", "finished")
        steps.setdefault(node.step, []).append(node)
    for step, nodes in steps.items():
        assert len(nodes) <= 2 * k
        assert [n.rank for n in nodes] == list(range(len(nodes)))
        scores = [n.score for n in nodes]
        assert scores == sorted(scores, reverse=True), "candidates are recorded in rank order"
        assert sum(n.status == "kept" for n in nodes) <= k
        # a pruned candidate never outranks a kept one
        kept_ranks = [n.rank for n in nodes if n.status == "kept"]
        pruned_ranks = [n.rank for n in nodes if n.status == "pruned" and n.token_id != EOS_ID]
        if kept_ranks and pruned_ranks:
            assert max(kept_ranks) < min(pruned_ranks)
    # every n-best hypothesis is a root-to-leaf path of finished nodes
    finished_paths = {
        tuple(n.token_id for n in result.path(node.id))
        for node in result.nodes if node.status == "finished"
    }
    for hyp in result.nbest:
        assert tuple(hyp.token_ids) in finished_paths


def test_node_attention_is_the_row_that_produced_it():
    model = TableModel(vocab_size=6, seed=7)
    source = SOURCES[2]
    result = beam_search(model, source, beam_size=3, max_len=6)
    src = torch.tensor([source])
    for node in result.nodes[1:]:
        prefix = [BOS_ID] + [n.token_id for n in result.path(node.id)][:-1]
        state = model.start(src=src)
        with torch.no_grad():
            for token in prefix:
                _, state, attn = model.step(torch.tensor([token]), state)
        assert node.attention.shape == (1, 1, len(source))
        np.testing.assert_allclose(node.attention, attn[0].numpy(), atol=1e-6)


def test_batched_sources_match_one_at_a_time_and_share_each_step():
    model = TableModel(vocab_size=6, seed=11)
    one_by_one = [beam_search(model, s, beam_size=3, alpha=0.5, max_len=7) for s in SOURCES]
    model.step_calls = 0
    batched = beam_search_batch(model, SOURCES, beam_size=3, alpha=0.5, max_len=7, with_greedy=False)
    longest = max(max(n.step for n in r.nodes) for r in batched)
    # one forward for <bos>, then at most one per expanded position: never one per hypothesis
    assert model.step_calls <= longest + 1
    for single, both in zip(one_by_one, batched):
        assert [h.token_ids for h in both.nbest] == [h.token_ids for h in single.nbest]
        assert [h.score for h in both.nbest] == pytest.approx([h.score for h in single.nbest])
        assert len(both.nodes) == len(single.nodes)
        for a, b in zip(both.nodes[1:], single.nodes[1:]):
            np.testing.assert_allclose(a.attention, b.attention, atol=1e-6)


def test_greedy_batch_matches_single_and_stops_at_eos_or_max_len():
    model = TableModel(vocab_size=6, seed=2)
    batch = greedy_batch(model, SOURCES, max_len=9)
    for source, hyp in zip(SOURCES, batch):
        single = greedy(model, source, max_len=9)
        assert hyp.token_ids == single.token_ids
        ids = hyp.token_ids
        assert (ids[-1] == EOS_ID) == hyp.finished
        assert EOS_ID not in ids[:-1] and len(ids) <= 9
        # greedy: each token is the argmax given its prefix
        bias = model.src_embedding[source].sum(0)
        previous = BOS_ID
        for position, token in enumerate(ids):
            assert token == int((model.table[position, previous] + bias).argmax())
            previous = token


def test_search_stops_early_when_no_live_hypothesis_can_win():
    model = TableModel(vocab_size=5, seed=0, sharpness=0.1)
    with torch.no_grad():
        model.table[:, :, EOS_ID] += 8.0  # <eos> is by far the most likely token everywhere
    result = beam_search(model, SOURCES[0], beam_size=2, max_len=10)
    assert max(n.step for n in result.nodes) < 3
    assert all(h.token_ids[-1] == EOS_ID for h in result.nbest)


def test_language_model_continues_prompt():
    model = TableModel(vocab_size=6, seed=4, family="rnn-lm")
    prompt = [5, 3, 4]
    result = beam_search(model, prompt, beam_size=3, max_len=5)
    assert result.nodes[0].token_id == prompt[-1]
    for hyp in result.nbest:
        forced = score_ids(model, prompt, hyp.token_ids)
        assert hyp.score == pytest.approx(forced.total, abs=1e-6)
        assert all(a is None for a in hyp.attention)
    assert beam_search(model, prompt, beam_size=1, max_len=5).best.token_ids == (
        greedy(model, prompt, max_len=5).token_ids
    )


def test_result_to_dict_is_json():
    import json

    model = TableModel(vocab_size=6, seed=1)
    result = beam_search(model, SOURCES[0], beam_size=2, max_len=4)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["hypotheses"][0]["token_ids"] == result.best.token_ids
    assert len(data["tree"]["nodes"]) == len(result.nodes)
    assert np.asarray(data["tree"]["nodes"][1]["attention"]).shape == (1, 1, len(SOURCES[0]))
