"""BLEU and its breakdown against sacreBLEU's API, the lecture notes' examples and brute force."""

import json
import math
import random
from collections import Counter

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU

from explorer.metrics.bleu import (
    IncrementalBleu,
    corpus_bleu,
    matched_ngrams,
    sentence_bleu,
    sentence_example,
)

WORDS = "the a cat dog sat on mat . , The Dog ran fast slowly home !".split()


def random_sentence(rng: random.Random, low: int = 0, high: int = 14) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def perturbed(rng: random.Random, sentence: str) -> str:
    """A system-like output: the sentence with some words replaced, dropped or doubled."""
    words = []
    for word in sentence.split():
        roll = rng.random()
        words += [] if roll < 0.1 else [rng.choice(WORDS)] if roll < 0.25 else [word] * (
            2 if roll > 0.95 else 1)
    return " ".join(words)


def random_corpus(seed: int, n: int = 60, num_refs: int = 1):
    rng = random.Random(seed)
    refs = [[random_sentence(rng, 1) for _ in range(n)] for _ in range(num_refs)]
    hyps = [perturbed(rng, rng.choice(refs)[i]) for i in range(n)]
    return hyps, refs


def assert_same(ours, theirs, metric: BLEU):
    assert ours.score == pytest.approx(theirs.score, abs=1e-9)
    # sacreBLEU's add-k adds k to its reported counts and totals for n > 1; ours stay the raw
    # clipped counts, the precisions carry the smoothing
    k = (metric.smooth_value or 1) if metric.smooth_method == "add-k" else 0
    assert [c + k * (n > 0) for n, c in enumerate(ours.counts)] == list(theirs.counts)
    assert [t + k * (n > 0) for n, t in enumerate(ours.totals)] == list(theirs.totals)
    assert ours.precisions == pytest.approx(theirs.precisions, abs=1e-9)
    assert ours.bp == pytest.approx(theirs.bp, abs=1e-12)
    assert (ours.sys_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert ours.signature == metric.get_signature().format()
    assert ours.format() == theirs.format()  # the "BLEU = ..." line sacreBLEU prints


# --- the lecture notes' worked examples ---------------------------------------------------------


def test_notes_clipped_unigram_precision_is_3_of_6():
    hyp = "He He He eats tasty fruit"
    refs = ["He eats a sweet apple", "He is eating a tasty apple"]
    result = sentence_bleu(hyp, refs)
    # "He" matches 3 times but is clipped to 1 (the most any reference holds); eats, tasty match.
    assert (result.counts[0], result.totals[0]) == (3, 6)
    unigrams = [tokens for n, _, tokens in matched_ngrams(hyp, refs) if n == 1]
    assert unigrams == [("He",), ("eats",), ("tasty",)]


def test_notes_guard_example_precisions_and_brevity():
    # The notes print p1 = 5/6, but their own c = 8 and the 8 hypothesis words give 8 unigrams:
    # The, guard, arrived, late, because match; of, the (lower case), rain do not. So p1 = 5/8.
    # p2 = 4/7, p3 = 3/6 and p4 = 2/5 agree with the notes, as do c = r = 8 and BP = 1.
    hyp = "The guard arrived late because of the rain"
    ref = "The guard arrived late because it was raining"
    result = sentence_bleu(hyp, ref)
    assert result.counts == [5, 4, 3, 2]
    assert result.totals == [8, 7, 6, 5]
    assert (result.sys_len, result.ref_len, result.bp) == (8, 8, 1.0)
    # BLEU = BP * (p1 p2 p3 p4)^(1/4), the notes' formula
    expected = 100 * (5 / 8 * 4 / 7 * 3 / 6 * 2 / 5) ** 0.25
    assert result.score == pytest.approx(expected, abs=1e-9)


def test_brevity_penalty_uses_the_closest_reference_length():
    hyp = "a b c d e"  # c = 5
    refs = ["a b c", "a b c d e f"]  # lengths 3 and 6: 6 is closer
    result = sentence_bleu(hyp, refs)
    assert result.ref_len == 6
    assert result.bp == pytest.approx(math.exp(1 - 6 / 5))
    tie = sentence_bleu("a b c d", ["a b", "a b c d e f"])  # |4-2| == |4-6|: the shorter wins
    assert tie.ref_len == 2 and tie.bp == 1.0


def test_unsmoothed_score_is_bp_times_geometric_mean():
    hyps, refs = random_corpus(seed=3, n=40)
    result = corpus_bleu(hyps, refs, smooth="none")
    assert all(result.counts)
    precisions = [c / t for c, t in zip(result.counts, result.totals)]
    bp = 1.0 if result.sys_len > result.ref_len else math.exp(1 - result.ref_len / result.sys_len)
    assert result.bp == pytest.approx(bp)
    assert result.score == pytest.approx(100 * bp * math.prod(precisions) ** 0.25)


# --- exact agreement with sacreBLEU -------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"lowercase": True},
        {"tokenize": "intl"},
        {"tokenize": "char"},
        {"tokenize": "none", "smooth": "floor"},
        {"smooth": "add-k", "smooth_value": 2},
        {"smooth": "none", "max_order": 2},
    ],
)
def test_corpus_bleu_equals_sacrebleu(options):
    hyps, refs = random_corpus(seed=len(str(options)), num_refs=2)
    metric = BLEU(
        tokenize=options.get("tokenize", "13a"),
        lowercase=options.get("lowercase", False),
        smooth_method=options.get("smooth", "exp"),
        smooth_value=options.get("smooth_value"),
        max_ngram_order=options.get("max_order", 4),
    )
    assert_same(corpus_bleu(hyps, refs, **options), metric.corpus_score(hyps, refs), metric)


def test_single_reference_stream_may_be_a_plain_list():
    hyps, refs = random_corpus(seed=11)
    assert corpus_bleu(hyps, refs[0]) == corpus_bleu(hyps, refs)
    expected = sacrebleu.corpus_bleu(hyps, refs).score
    assert corpus_bleu(hyps, refs[0]).score == pytest.approx(expected)


def test_variable_number_of_references_per_sentence():
    hyps = ["the cat sat on the mat", "a dog ran home", "the dog sat"]
    refs = [["the cat sat on a mat", "a dog ran home fast", "the dog sat down"],
            ["a cat is on the mat", None, "dog sat"]]
    metric = BLEU()
    assert_same(corpus_bleu(hyps, refs), metric.corpus_score(hyps, refs), metric)
    assert "nrefs:var" in corpus_bleu(hyps, refs).signature


@pytest.mark.parametrize("options", [{}, {"lowercase": True}, {"smooth": "floor"},
                                     {"effective_order": False}, {"tokenize": "char"}])
def test_sentence_bleu_equals_sacrebleu(options):
    rng = random.Random(7)
    effective = options.get("effective_order", True)
    metric = BLEU(
        effective_order=effective,
        lowercase=options.get("lowercase", False),
        smooth_method=options.get("smooth", "exp"),
        tokenize=options.get("tokenize", "13a"),
    )
    for _ in range(30):
        hyp = random_sentence(rng)
        refs = [random_sentence(rng, 1) for _ in range(rng.randint(1, 3))]
        assert_same(sentence_bleu(hyp, refs, **options), metric.sentence_score(hyp, refs), metric)


def test_empty_corpus_and_bad_arguments():
    assert corpus_bleu([], [[]]).score == 0.0
    with pytest.raises(ValueError, match="reference stream 1 has 1 sentences"):
        corpus_bleu(["a", "b"], [["a"]])
    assert corpus_bleu([], []).score == 0.0
    with pytest.raises(ValueError, match="reference stream 1 has 0 sentences"):
        corpus_bleu(["a"], [])
    with pytest.raises(ValueError, match="unknown smoothing"):
        corpus_bleu(["a"], ["a"], smooth="magic")
    with pytest.raises(ValueError, match="unknown BLEU tokenizer"):
        corpus_bleu(["a"], ["a"], tokenize="nope")


def test_to_dict_is_json_ready():
    hyps, refs = random_corpus(seed=5)
    data = json.loads(json.dumps(corpus_bleu(hyps, refs).to_dict()))
    assert set(data) == {"score", "counts", "totals", "precisions", "bp", "sys_len", "ref_len",
                         "signature"}
    assert len(data["counts"]) == len(data["totals"]) == len(data["precisions"]) == 4


# --- matched n-grams ----------------------------------------------------------------------------


def brute_force_matches(hyp_tokens, ref_token_lists, n):
    """Clipped matches of order n the slow way: min(hyp count, max ref count) per n-gram."""
    grams = Counter(tuple(hyp_tokens[i : i + n]) for i in range(len(hyp_tokens) - n + 1))
    total = 0
    for gram, count in grams.items():
        most = max(
            sum(tuple(r[i : i + n]) == gram for i in range(len(r) - n + 1)) for r in ref_token_lists
        )
        total += min(count, most)
    return total


@settings(max_examples=60, deadline=None)
@given(
    hyp=st.lists(st.sampled_from("abcd"), max_size=12),
    refs=st.lists(st.lists(st.sampled_from("abcde"), min_size=1, max_size=12), min_size=1,
                  max_size=3),
)
def test_matched_ngrams_agree_with_counts_and_brute_force(hyp, refs):
    hyp_text, ref_texts = " ".join(hyp), [" ".join(r) for r in refs]
    matched = matched_ngrams(hyp_text, ref_texts)
    counts = sentence_bleu(hyp_text, ref_texts).counts
    for n in range(1, 5):
        found = [(start, tokens) for order, start, tokens in matched if order == n]
        assert len(found) == counts[n - 1] == brute_force_matches(hyp, refs, n)
        for start, tokens in found:
            assert tuple(hyp[start : start + n]) == tokens


def test_sentence_example_tokens_and_highlights():
    example = sentence_example("The cat, sat.", "the cat sat .", lowercase=True)
    assert example.hyp_tokens == ["the", "cat", ",", "sat", "."]
    assert example.ref_tokens == ["the", "cat", "sat", "."]
    assert (2, 0, ("the", "cat")) in example.matched
    assert (1, 2, (",",)) not in example.matched


# --- live BLEU ----------------------------------------------------------------------------------


def test_incremental_bleu_equals_corpus_bleu_on_everything_added():
    hyps, refs = random_corpus(seed=21, n=90, num_refs=2)
    live = IncrementalBleu()
    for start in range(0, 90, 25):
        live.add(hyps[start : start + 25], [stream[start : start + 25] for stream in refs])
        seen = [stream[: start + 25] for stream in refs]
        assert live.result() == corpus_bleu(hyps[: start + 25], seen)
    assert live.sentences == 90
    live.reset()
    live.add(hyps[:5], refs[0][:5])
    assert live.result() == corpus_bleu(hyps[:5], refs[0][:5])


def test_incremental_bleu_with_options_matches_sacrebleu():
    hyps, refs = random_corpus(seed=9, n=40)
    live = IncrementalBleu(lowercase=True, smooth="add-k")
    live.add(hyps[:13], refs[0][:13])
    live.add(hyps[13:], refs[0][13:])
    metric = BLEU(lowercase=True, smooth_method="add-k")
    assert_same(live.result(), metric.corpus_score(hyps, refs), metric)
