"""A picked output token (explorer.analysis.token_pick): the probe input and the attribution row
it names are the picked token's, for an encoder-decoder and a language model."""

from __future__ import annotations

import pytest
import torch

from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.token_pick import pick_token
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace
from seqmodels.config import EOS_ID


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=64)


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="brackets", n_train=32, n_val=4), "gpt", seed=0,
                           d_model=16, num_heads=2, num_layers=1, d_ff=32, max_len=64)


def _picked(workspace, pick):
    return attribution_input(workspace, pick.source, pick.target).rows[pick.row]


@pytest.mark.parametrize("length", [1, 3])
def test_an_encoder_decoder_pick_is_teacher_forced_on_the_output_before_it(transformer, length):
    ids = transformer.tokenizer.encode("dcb")[:length]
    pick = pick_token(transformer, "abcd", ids, "a test")
    assert (pick.source, pick.target, pick.row) == ("abcd", "dcb"[:length], length - 1)
    assert _picked(transformer, pick).token_id == ids[-1]
    assert pick.token == transformer.tokenizer.tokens([ids[-1]])[0]


def test_a_picked_eos_is_the_eos_row(transformer):
    ids = transformer.tokenizer.encode("dc") + [EOS_ID]
    pick = pick_token(transformer, "abcd", ids, "a test")
    assert pick.target == "dc" and _picked(transformer, pick).token_id == EOS_ID


def test_a_language_model_reads_prompt_and_output_as_one_text(gpt):
    ids = gpt.tokenizer.encode("())")
    pick = pick_token(gpt, "((", ids, "a test")
    assert pick.source == "((())" and pick.target == ""
    row = _picked(gpt, pick)
    assert row.token_id == ids[-1] and row.position == 3  # predicted from the 4 tokens before it


@pytest.mark.parametrize("name, source, ids, message", [
    ("transformer", "abc", [], "nothing decoded yet"),
    ("gpt", "(", [EOS_ID], "<eos> ends the text"),
])
def test_what_cannot_be_picked_is_one_line(request, name, source, ids, message):
    with pytest.raises(UserError, match=message):
        pick_token(request.getfixturevalue(name), source, ids, "a test")
