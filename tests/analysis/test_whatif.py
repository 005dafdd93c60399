"""What if: the token diff against a brute-force longest common subsequence, each side's
log-probability against `explorer score`, an unchanged edit, and bad input."""

import itertools
import random

import numpy as np
import pytest
import torch

from explorer.analysis.whatif import token_diff, what_if, whatif_side
from explorer.decoding.scoring import score
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace


def _lcs_length(a, b) -> int:
    """The longest common subsequence by brute force over b's subsequences (short lists)."""
    best = 0
    for size in range(len(b), 0, -1):
        for picked in itertools.combinations(range(len(b)), size):
            sub = [b[i] for i in picked]
            it = iter(a)
            if all(token in it for token in sub):  # sub is a subsequence of a
                return size
    return best


@pytest.mark.parametrize("seed", range(30))
def test_diff_marks_exactly_the_changed_tokens(seed):
    rng = random.Random(seed)
    original = rng.sample("abcdefghijklmn", rng.randint(0, 8))  # distinct tokens
    edited = list(original)
    for _ in range(rng.randint(0, 3)):
        kind = rng.choice(("insert", "delete", "replace"))
        if kind == "insert" or not edited:
            edited.insert(rng.randint(0, len(edited)), rng.choice("opqrstuvwxyz"))
        elif kind == "delete":
            del edited[rng.randrange(len(edited))]
        else:
            edited[rng.randrange(len(edited))] = rng.choice("opqrstuvwxyz")
    diff = token_diff(original, edited)
    kept_a = [t for t, mark in zip(original, diff.original) if not mark]
    kept_b = [t for t, mark in zip(edited, diff.edited) if not mark]
    # the unmarked tokens are one common subsequence, as long as any: exactly the changes marked
    assert kept_a == kept_b
    assert len(kept_a) == _lcs_length(original, edited)
    assert diff.unchanged == (original == edited)


@pytest.fixture(scope="module")
def workspace():
    """A Transformer trained a little on `reverse`, so its greedy outputs end with <eos>."""
    from explorer.training import TrainConfig, Trainer

    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="reverse", n_train=64, n_val=4), "transformer", seed=0,
                                d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)
    for _ in Trainer(workspace, TrainConfig(steps=40, batch_size=16, lr=1e-2, eval_every=1000)).run():
        pass
    return workspace


def test_each_side_scores_as_explorer_score(workspace):
    source = workspace.data.val[0][0]
    edited = source[::-1]
    result = what_if(workspace, source, edited, progress=lambda done, total: None)
    for side in (result.original, result.edited):
        assert side.output_ids[-1] == 2, "the output should finish with <eos>"
        reference = score(workspace, side.source, side.output)
        assert side.logprob == pytest.approx(reference.total, abs=1e-9)
        np.testing.assert_allclose(side.token_logprobs, reference.logprobs, atol=1e-9)
        assert side.attention.shape == (len(side.output_tokens), len(source) + 1)
        np.testing.assert_allclose(side.attention.sum(axis=1), 1.0, atol=1e-5)
        assert side.attribution.shape[0] == len(side.output_tokens)
    assert result.logprob_change == pytest.approx(result.edited.logprob - result.original.logprob)
    assert result.diff.edited.any() == (result.original.output_tokens != result.edited.output_tokens)


def test_an_unchanged_edit_gives_identical_sides(workspace):
    source = workspace.data.val[1][0]
    original = whatif_side(workspace, source)
    result = what_if(workspace, original, source)
    assert result.diff.unchanged
    assert result.edited.output_tokens == original.output_tokens
    assert result.edited.logprob == original.logprob
    np.testing.assert_array_equal(result.edited.attention, original.attention)
    np.testing.assert_array_equal(result.edited.attribution, original.attribution)


def test_bad_edits_are_one_line(workspace):
    original = whatif_side(workspace, workspace.data.val[0][0])
    too_long = "a" * 100  # the model reads 64 positions
    for edit, words in (("", "empty"), ("   ", "empty"), (too_long, "more than the model reads")):
        with pytest.raises(UserError) as caught:
            what_if(workspace, original, edit)
        assert words in str(caught.value) and "\n" not in str(caught.value)


def test_stopping_between_steps(workspace):
    with pytest.raises(UserError, match="stopped"):
        what_if(workspace, "abc", "abd", should_stop=lambda: True)


def test_language_model_sides():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="brackets", n_train=16, n_val=4), "gpt", seed=0)
    side = whatif_side(workspace, "(()")
    assert side.attention_title.startswith("self-attention")
    assert side.attention.shape[0] == side.attention.shape[1]  # prompt and output over themselves
    context = workspace.tokenizer.encode("(()")
    from explorer.decoding.scoring import score_ids

    assert side.logprob == pytest.approx(score_ids(workspace.model, context, side.output_ids).total, abs=1e-9)
