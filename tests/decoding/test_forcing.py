"""What-if decoding: forcing a token in step-through decoding, checked against plain greedy
decoding and against teacher-forced scoring (`explorer score`)."""

import pytest
import torch

from explorer.decoding import StepDecoder, encode_context, greedy, score, score_ids
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace
from seqmodels.config import EOS_ID

SOURCE = "abcdef"


@pytest.fixture(scope="module")
def workspace():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)


def _run(decoder):
    while decoder.step():
        pass
    return decoder.output


def test_forcing_the_argmax_leaves_greedy_unchanged(workspace):
    decoder = StepDecoder(workspace, SOURCE, max_len=20)
    for _ in range(4):
        decoder.force(decoder.topk.token_ids[0])
    forced = _run(decoder)
    plain = greedy(workspace.model, encode_context(workspace, SOURCE), max_len=20,
                   tokenizer=workspace.tokenizer)
    assert forced.token_ids == plain.token_ids
    assert forced.score == pytest.approx(plain.score)
    assert decoder.forced == {0, 1, 2, 3}


def test_forcing_another_token_scores_like_teacher_forcing(workspace):
    decoder = StepDecoder(workspace, SOURCE, max_len=20)
    decoder.step()
    runner_up = decoder.topk.token_ids[1]
    decoder.force(runner_up)
    forced = _run(decoder)
    assert forced.token_ids[1] == runner_up and decoder.forced == {1}
    assert forced.token_ids != decoder.own_output.token_ids
    teacher = score_ids(workspace.model, decoder.context, forced.token_ids)
    assert forced.score == pytest.approx(teacher.total, abs=1e-5)


def test_forcing_eos_gives_the_score_of_that_text(workspace):
    decoder = StepDecoder(workspace, SOURCE, max_len=20)
    for letter in "fed":  # typed: one character token each
        decoder.force(letter)
    decoder.force(EOS_ID)
    assert decoder.done
    hypothesis = decoder.output
    assert hypothesis.text == "fed"
    assert hypothesis.score == pytest.approx(score(workspace, SOURCE, hypothesis.text).total, abs=1e-5)


def test_back_undoes_a_forced_step(workspace):
    decoder = StepDecoder(workspace, SOURCE, max_len=20)
    decoder.step()
    decoder.force(decoder.topk.token_ids[2])
    assert decoder.forced == {1}
    decoder.back()
    assert decoder.forced == set() and decoder.steps_taken == 1


def test_forcing_bad_tokens_is_one_line(workspace):
    decoder = StepDecoder(workspace, SOURCE, max_len=20)
    with pytest.raises(UserError, match="tokens"):
        decoder.force("abc")  # three characters: three tokens
    with pytest.raises(UserError, match="outside the vocabulary"):
        decoder.force(10**6)
    with pytest.raises(UserError, match="beam"):
        StepDecoder(workspace, SOURCE, "beam").force(3)
    assert decoder.steps_taken == 0
