"""Decoding a batch of sources of different lengths (right-padded, masked) gives every source
exactly what decoding it alone gives, on every real model with a source: the RNN encoder-decoder
with each attention score, cell and reading order, and the Transformer with each positional
encoding. Greedy's tokens are checked against the model's own teacher-forced `forward` (another
code path than the incremental `step` the searches use): each is the argmax of its distribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.decoding import beam_search, beam_search_batch, greedy, greedy_batch
from explorer.decoding.search import greedy_ids
from seqmodels.cells import cell_names
from seqmodels.config import ATTENTION_SCORES, BOS_ID, EOS_ID, build_model, make_config

VOCAB = 17
# lengths 7, 2, 4, 5: every source but the longest is padded in a batch
SOURCES = [[5, 9, 7, 12, 6, 11, 2], [13, 2], [6, 11, 16, 2], [12, 8, 8, 10, 2]]
MAX_LEN = 9
ATOL = 1e-5
CELLS = cell_names()  # the registered cells (seqmodels.cells)

SEQ2SEQ = {
    f"seq2seq-{score}-{CELLS[i % len(CELLS)]}": dict(
        cell=CELLS[i % len(CELLS)], attention=score,
        bidirectional_encoder=i % 2 == 0, reverse_source=i % 3 == 1,
    )
    for i, score in enumerate(ATTENTION_SCORES)
}
CONFIGS = {
    **{name: dict(family="seq2seq", **options) for name, options in SEQ2SEQ.items()},
    "seq2seq-additive-lstm-reversed": dict(family="seq2seq", cell="lstm", attention="additive",
                                           reverse_source=True, num_layers=2),
    # dropout > 0: decoding must switch it off whatever the model's mode
    **{f"transformer-{p}": dict(family="transformer", positional=p, dropout=0.3, max_len=32)
       for p in ("sinusoidal", "learned", "rope")},
}


def build(name: str, seed: int = 0):
    options = dict(CONFIGS[name])
    family = options.pop("family")
    torch.manual_seed(seed)
    model = build_model(make_config(family, "tiny", vocab_size=VOCAB, src_vocab_size=VOCAB,
                                    **options))
    with torch.no_grad():  # sharpen the outputs: greedy and beam then part ways on some sources
        for parameter in model.parameters():
            parameter.mul_(1.5)
    return model.train()  # the searches put it in eval mode themselves


@pytest.fixture(scope="module", params=list(CONFIGS))
def model(request):
    return build(request.param)


def teacher_forced(model, source, target_ids) -> np.ndarray:
    """log p(. | y_<t, x) at every target position, from the model's training forward (T, V)."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([source]), torch.tensor([[BOS_ID] + target_ids[:-1]]))
    model.train(was_training)
    return torch.log_softmax(logits[0].double(), dim=-1).numpy()


def test_sources_in_the_longest_batch_are_padded():
    assert len({len(s) for s in SOURCES}) == len(SOURCES) and SOURCES[0] == max(SOURCES, key=len)


def test_batched_greedy_equals_greedy_alone_and_takes_the_argmax(model):
    batched = greedy_batch(model, SOURCES, max_len=MAX_LEN)
    assert model.training  # restored
    for source, hyp in zip(SOURCES, batched):
        alone = greedy(model, source, max_len=MAX_LEN)
        assert hyp.token_ids == alone.token_ids
        np.testing.assert_allclose(hyp.token_logprobs, alone.token_logprobs, atol=ATOL, rtol=0)
        assert hyp.finished == (hyp.token_ids[-1] == EOS_ID)
        forced = teacher_forced(model, source, hyp.token_ids)  # (T, V)
        picked = forced[np.arange(len(hyp.token_ids)), hyp.token_ids]
        np.testing.assert_allclose(hyp.token_logprobs, picked, atol=ATOL, rtol=0)
        # the most probable token at every step (up to float noise between step and forward)
        assert np.all(picked >= forced.max(axis=1) - ATOL), (picked, forced.max(axis=1))


def test_greedy_ids_drop_finished_rows_and_equal_greedy_alone(model):
    """Evaluation's greedy: each row stops at its own limit and leaves the batch when done."""
    limits = [MAX_LEN, 1, 4, MAX_LEN - 2]
    for source, limit, (ids, finished) in zip(SOURCES, limits, greedy_ids(model, SOURCES, limits)):
        alone = greedy(model, source, max_len=limit)
        assert ids == alone.token_ids
        assert finished == alone.finished
    assert model.training  # restored


def test_batched_beam_equals_beam_alone(model):
    batched = beam_search_batch(model, SOURCES, beam_size=3, alpha=0.0, max_len=MAX_LEN, nbest=3)
    for source, result in zip(SOURCES, batched):
        alone = beam_search(model, source, beam_size=3, alpha=0.0, max_len=MAX_LEN, nbest=3)
        assert [h.token_ids for h in result.nbest] == [h.token_ids for h in alone.nbest]
        for both, single in zip(result.nbest, alone.nbest):
            np.testing.assert_allclose(both.token_logprobs, single.token_logprobs,
                                       atol=ATOL, rtol=0)
            forced = teacher_forced(model, source, single.token_ids)
            picked = forced[np.arange(len(single.token_ids)), single.token_ids]
            np.testing.assert_allclose(single.token_logprobs, picked, atol=ATOL, rtol=0)
        # the greedy path beam_search_batch returns alongside is the batched greedy, per source
        assert result.greedy.token_ids == greedy(model, source, max_len=MAX_LEN).token_ids
        # the same tree, node for node, attention cut to the source's own length
        assert [(n.parent, n.token_id, n.status) for n in result.nodes] == [
            (n.parent, n.token_id, n.status) for n in alone.nodes]
        for a, b in zip(result.nodes[1:], alone.nodes[1:]):
            if b.attention is not None:
                np.testing.assert_allclose(a.attention, b.attention, atol=ATOL, rtol=0)
