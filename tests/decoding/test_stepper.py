"""StepDecoder: stepping forwards reproduces the one-shot searches; stepping back restores everything."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import IdTokenizer, TableModel

from explorer.decoding import StepDecoder, beam_search, greedy, sample
from explorer.workspace import Workspace
from seqmodels.config import BOS_ID

SOURCE = [5, 6, 7, 2]


def make_workspace(seed=0, vocab=9):
    return Workspace(model=TableModel(vocab_size=vocab, seed=seed), tokenizer=IdTokenizer(),
                     src_tokenizer=IdTokenizer())


def run_to_end(decoder):
    while decoder.step():
        pass
    return decoder


def snapshot(decoder):
    top = decoder.topk
    return (
        decoder.output.token_ids,
        [(h.token_ids, h.score) for h in decoder.beam],
        None if top is None else (top.token_ids, top.probs.tolist()),
        None if decoder.attention is None else decoder.attention.tolist(),
        decoder.done,
    )


def test_greedy_steps_match_greedy_and_expose_the_next_distribution():
    ws = make_workspace(seed=1)
    decoder = StepDecoder(ws, "t5 t6 t7", "greedy", max_len=8, show_top=4)
    assert decoder.context == SOURCE and decoder.source_tokens == ["t5", "t6", "t7", "<eos>"]
    expected = greedy(ws.model, SOURCE, max_len=8)
    src = torch.tensor([SOURCE])
    while not decoder.done:
        prefix = [BOS_ID] + decoder.output.token_ids
        with torch.no_grad():
            logits = ws.model(src, torch.tensor([prefix]))[0, -1]  # (V,) teacher-forced reference
        probs, ids = logits.softmax(-1).topk(4)
        assert decoder.topk.token_ids == ids.tolist()
        assert decoder.topk.tokens == IdTokenizer().tokens(ids.tolist())
        np.testing.assert_allclose(decoder.topk.probs, probs.numpy(), atol=1e-6)
        assert decoder.attention.shape == (1, 1, len(SOURCE))
        assert decoder.attention.sum() == pytest.approx(1.0)
        decoder.step()
    assert decoder.output.token_ids == expected.token_ids
    assert decoder.topk is None and not decoder.step()


def test_beam_steps_match_beam_search():
    ws = make_workspace(seed=2)
    expected = beam_search(ws.model, SOURCE, beam_size=3, alpha=0.5, max_len=7)
    decoder = run_to_end(StepDecoder(ws, SOURCE, "beam", beam_size=3, alpha=0.5, max_len=7))
    result = decoder.result()
    assert [h.token_ids for h in result.nbest] == [h.token_ids for h in expected.nbest]
    assert len(result.nodes) == len(expected.nodes)
    assert decoder.output.token_ids == expected.best.token_ids


def test_beam_exposes_live_hypotheses_sorted_by_score():
    decoder = StepDecoder(make_workspace(seed=3), SOURCE, "beam", beam_size=4, max_len=9)
    decoder.step()
    decoder.step()
    live = decoder.beam
    assert 1 <= len(live) <= 4
    assert all(len(h.token_ids) == 2 for h in live)
    scores = [h.score for h in live]
    assert scores == sorted(scores, reverse=True)
    assert decoder.output.token_ids == live[0].token_ids


@pytest.mark.parametrize("strategy", ["greedy", "beam", "sample"])
def test_back_restores_every_view_and_replays_identically(strategy):
    decoder = StepDecoder(make_workspace(seed=4), SOURCE, strategy, beam_size=3, max_len=8,
                          top_p=0.9, seed=7)
    views = [snapshot(decoder)]
    while decoder.step():
        views.append(snapshot(decoder))
    final = snapshot(decoder)
    for expected in reversed(views[:-1]):
        assert decoder.back()
        assert snapshot(decoder) == expected
    assert not decoder.back() and decoder.steps_taken == 0
    assert snapshot(run_to_end(decoder)) == final  # a sampler is rewound with its generator
    decoder.reset()
    assert snapshot(decoder) == views[0]


def test_sampling_steps_match_sample_and_show_their_distribution():
    ws = make_workspace(seed=5)
    expected = sample(ws.model, SOURCE, temperature=1.3, top_k=4, seed=11, max_len=8)
    decoder = StepDecoder(ws, SOURCE, "sample", temperature=1.3, top_k=4, seed=11, max_len=8)
    assert decoder.last_distribution is None
    decoder.step()
    assert len(decoder.last_distribution.token_ids) == 4
    run_to_end(decoder)
    assert decoder.output.token_ids == expected.hypothesis.token_ids


def test_model_tokenizer_tuple_and_bad_strategy():
    model = TableModel(vocab_size=6, seed=0, family="rnn-lm")
    decoder = StepDecoder((model, IdTokenizer()), "t5 t5", "greedy", max_len=4)
    assert decoder.attention is None
    run_to_end(decoder)
    assert decoder.output.token_ids == greedy(model, [5, 5], max_len=4).token_ids
    with pytest.raises(ValueError):
        StepDecoder((model, IdTokenizer()), "t5", "nucleus")
