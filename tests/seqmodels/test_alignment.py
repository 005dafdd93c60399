"""Each attention score against its formula from the lecture notes, written out one pair at a time.

The formulas of the built-in scores are here; a new score's is in its own file,
tests/seqmodels/score_<name>.py (`REFERENCE(align, s, h) -> (Tk,)` and `STATE_KEYS`, the
state-dict keys it saves), so adding a score touches no existing test. A score with no formula
anywhere fails test_the_table_is_complete_and_every_score_has_a_formula_here."""

import importlib
import math

import pytest
import torch

from seqmodels import Alignment
from seqmodels.scores import SCORES as TABLE

SCORES = [name for name, entry in TABLE.items() if entry.function is not None]  # "none" has no score

B, TK, H = 2, 5, 4


def pairwise(formula):
    """A score of decoder state s (Hq,) against every encoder state h (Tk, Hk), one pair at a time."""
    return lambda align, s, h: torch.stack([formula(align, s, h_i) for h_i in h])


# name -> (its formula, the state-dict keys it saves: what checkpoints hold)
BUILT_IN = {
    "dot": (pairwise(lambda align, s, h_i: torch.dot(s, h_i)), set()),
    "scaled-dot": (pairwise(lambda align, s, h_i: torch.dot(s, h_i) / math.sqrt(h_i.numel())), set()),
    "general": (pairwise(lambda align, s, h_i: s @ align.W.weight @ h_i), {"W.weight"}),
    "additive": (pairwise(lambda align, s, h_i: align.v.weight[0] @ torch.tanh(
        align.W.weight @ torch.cat([s, h_i]))), {"W.weight", "v.weight"}),
    "cosine": (pairwise(lambda align, s, h_i: align.beta * torch.dot(s, h_i) / (s.norm() * h_i.norm())),
               {"beta"}),
    "location": (lambda align, s, h: (align.W.weight @ s + align.W.bias)[: h.shape[0]],
                 {"W.weight", "W.bias"}),
}


def reference(name: str):
    """(formula, state-dict keys) of a score: a built-in one's, or its score_<name>.py's."""
    if name in BUILT_IN:
        return BUILT_IN[name]
    module = importlib.import_module(f"score_{name.replace('-', '_')}")
    return module.REFERENCE, module.STATE_KEYS


def by_hand(align: Alignment, s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Score of decoder state s (Hq,) against every encoder state h (Tk, Hk) by the formula."""
    return reference(align.score)[0](align, s, h)


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("key_size", [H, 6])
def test_scores_match_formula(score, key_size):
    if TABLE[score].same_size and key_size != H:
        with pytest.raises(ValueError, match="query_size == key_size"):
            Alignment(score, H, key_size)
        return
    torch.manual_seed(0)
    align = Alignment(score, H, key_size, attn_size=3, max_src_len=8)
    if score == "cosine":
        with torch.no_grad():
            align.beta.fill_(2.5)
    query, keys = torch.randn(B, H), torch.randn(B, TK, key_size)
    context, weights = align(query, keys)
    assert context.shape == (B, key_size) and weights.shape == (B, TK)
    for b in range(B):
        alpha = torch.softmax(by_hand(align, query[b], keys[b]), dim=0)
        torch.testing.assert_close(weights[b], alpha, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(context[b], (alpha[:, None] * keys[b]).sum(0), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("score", SCORES)
def test_padding_gets_exactly_zero_and_the_rest_renormalises(score):
    torch.manual_seed(1)
    align = Alignment(score, H, H, max_src_len=8)
    query, keys = torch.randn(B, H), torch.randn(B, TK, H)
    lengths = [TK, 2]
    mask = torch.arange(TK)[None, :] >= torch.tensor(lengths)[:, None]
    context, weights = align(query, keys, mask)
    assert torch.all(weights[mask] == 0.0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B))
    for b, n in enumerate(lengths):
        alpha = torch.softmax(by_hand(align, query[b], keys[b, :n]), dim=0)
        torch.testing.assert_close(weights[b, :n], alpha, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(context[b], alpha @ keys[b, :n], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("score", SCORES)
def test_query_sequence_equals_one_query_at_a_time(score):
    torch.manual_seed(2)
    align = Alignment(score, H, H, max_src_len=8)
    queries, keys = torch.randn(B, 3, H), torch.randn(B, TK, H)
    mask = torch.tensor([[False] * TK, [False, False, False, True, True]])
    context, weights = align(queries, keys, mask)
    assert weights.shape == (B, 3, TK)
    for t in range(3):
        c_t, w_t = align(queries[:, t], keys, mask)
        torch.testing.assert_close(weights[:, t], w_t)
        torch.testing.assert_close(context[:, t], c_t)


def test_location_refuses_sources_longer_than_its_table_and_unknown_scores():
    align = Alignment("location", H, H, max_src_len=4)
    with pytest.raises(ValueError, match="at most 4"):
        align(torch.randn(1, H), torch.randn(1, 5, H))
    with pytest.raises(ValueError, match="unknown attention score"):
        Alignment("hard", H, H)


def test_gradients_reach_every_parameter():
    torch.manual_seed(3)
    for score in SCORES:  # every parameter of every score
        align = Alignment(score, H, H, max_src_len=8)
        if not list(align.parameters()):
            continue  # dot, scaled dot: nothing learned
        context, _ = align(torch.randn(B, H), torch.randn(B, TK, H))
        context.square().sum().backward()
        for name, p in align.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, (score, name)


def test_the_table_is_complete_and_every_score_has_a_formula_here():
    """A new entry in seqmodels.scores needs its formula in `by_hand` above and a label and tip."""
    for name, entry in TABLE.items():
        assert entry.label and entry.tip and entry.formula and entry.style in ("none", "luong", "bahdanau")
        assert (entry.function is None) == (entry.style == "none") == (name == "none")
    torch.manual_seed(4)
    for name in SCORES:  # by_hand knows every score: it returns one value per key
        align = Alignment(name, H, H, max_src_len=8)
        assert by_hand(align, torch.randn(H), torch.randn(TK, H)).shape == (TK,)


@pytest.mark.parametrize("score", SCORES)
def test_the_parameters_are_the_tables_and_keep_their_state_dict_keys(score):
    align = Alignment(score, H, 6 if not TABLE[score].same_size else H, attn_size=3, max_src_len=8)
    names = TABLE[score].parameters(H, 6, 3, 8)
    assert {key.split(".")[0] for key in align.state_dict()} == set(names)
    assert set(align.state_dict()) == reference(score)[1]  # what saved checkpoints hold


def test_the_seq2seq_decoding_style_follows_the_table():
    from seqmodels import build_model, make_config

    for name, entry in TABLE.items():
        model = build_model(make_config("seq2seq", "tiny", attention=name))
        assert model.style == entry.style
