"""The search invariants on every model family (tiny, untrained: invariants hold for any weights)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.decoding import StepDecoder, beam_search, beam_search_batch, greedy, sample
from explorer.decoding.scoring import score_ids
from seqmodels.config import EOS_ID, build_model, make_config

VOCAB = 13
SOURCES = [[5, 9, 7, 2], [6, 11, 2], [12, 8, 8, 10, 5, 2]]
PROMPTS = [[5, 9], [7, 7], [12, 6]]

CONFIGS = {
    "transformer": dict(family="transformer", preset="tiny", max_len=32),
    "seq2seq-additive": dict(family="seq2seq", preset="tiny", cell="gru", attention="additive"),
    "seq2seq-luong-lstm": dict(family="seq2seq", preset="tiny", cell="lstm", attention="general"),
    "seq2seq-none": dict(family="seq2seq", preset="tiny", cell="gru", attention="none"),
    "gpt": dict(family="gpt", preset="tiny", max_len=32),
    "rnn-lm": dict(family="rnn-lm", preset="tiny", cell="lstm"),
}


def build(name, seed=0):
    options = dict(CONFIGS[name])
    family, preset = options.pop("family"), options.pop("preset")
    if family in ("seq2seq", "transformer"):
        options["src_vocab_size"] = VOCAB
    torch.manual_seed(seed)
    model = build_model(make_config(family, preset, vocab_size=VOCAB, **options))
    with torch.no_grad():  # sharpen the output so that <eos> and ties are not all equally likely
        for parameter in model.parameters():
            parameter.mul_(1.5)
    return model.eval()


def contexts_of(model):
    return PROMPTS if model.config.family in ("gpt", "rnn-lm") else SOURCES


@pytest.fixture(scope="module", params=list(CONFIGS))
def model(request):
    return build(request.param)


def test_scores_equal_forward_teacher_forcing(model):
    for context in contexts_of(model):
        result = beam_search(model, context, beam_size=3, alpha=0.6, max_len=7)
        normalized = [h.normalized_score for h in result.nbest]
        assert normalized == sorted(normalized, reverse=True)
        for hyp in result.nbest + [result.greedy]:
            forced = score_ids(model, context, hyp.token_ids)
            np.testing.assert_allclose(hyp.token_logprobs, forced.logprobs, atol=1e-4)
            assert hyp.score == pytest.approx(forced.total, abs=1e-4)
        for node in result.nodes[1:]:
            assert node.score == node.logprob + result.nodes[node.parent].score


def test_width_one_is_greedy_and_batch_is_per_source(model):
    contexts = contexts_of(model)
    for context in contexts:
        assert beam_search(model, context, beam_size=1, max_len=8).best.token_ids == (
            greedy(model, context, max_len=8).token_ids
        )
    batched = beam_search_batch(model, contexts, beam_size=3, max_len=6, with_greedy=False)
    for context, result in zip(contexts, batched):
        single = beam_search(model, context, beam_size=3, max_len=6, with_greedy=False)
        assert [h.token_ids for h in result.nbest] == [h.token_ids for h in single.nbest]
        np.testing.assert_allclose([h.score for h in result.nbest], [h.score for h in single.nbest],
                                   atol=1e-4)


def test_node_attention_shapes(model):
    context = contexts_of(model)[2]
    result = beam_search(model, context, beam_size=2, max_len=4)
    attentions = [node.attention for node in result.nodes[1:]]
    family = model.config.family
    if family in ("gpt", "rnn-lm") or getattr(model.config, "attention", "") == "none":
        assert all(a is None for a in attentions)
        return
    layers, heads = (2, 4) if family == "transformer" else (1, 1)
    for attention in attentions:
        assert attention.shape == (layers, heads, len(context))
        np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)


def test_sampling_and_stepping_on_real_models(model):
    context = contexts_of(model)[0]
    drawn = sample(model, context, top_k=5, top_p=0.9, seed=1, max_len=6).hypothesis
    assert drawn.score == pytest.approx(score_ids(model, context, drawn.token_ids).total, abs=1e-4)
    decoder = StepDecoder((model, None), context, "beam", beam_size=3, max_len=6)
    while decoder.step():
        pass
    expected = beam_search(model, context, beam_size=3, max_len=6)
    assert decoder.output.token_ids == expected.best.token_ids


def test_gpt_generation_respects_its_context_window():
    model = build("gpt")
    model.config.max_len = 6
    prompt = [5, 9, 7]
    hyp = greedy(model, prompt, max_len=50)
    assert len(hyp.token_ids) <= 6 - len(prompt) + 1
    result = beam_search(model, prompt, beam_size=2, max_len=50)
    assert all(len(h.token_ids) <= 4 for h in result.nbest)
    assert all(h.token_ids[-1] == EOS_ID or not h.finished for h in result.nbest)
