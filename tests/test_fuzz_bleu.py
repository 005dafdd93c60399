"""BLEU against sacreBLEU itself on random input: random Unicode (combining marks, RTL, emoji,
NUL), empty sentences, very long ones, any smoothing and tokenizer."""

import math

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.cli import main
from explorer.metrics.bleu import IncrementalBleu, corpus_bleu, sentence_bleu

WORDS = st.sampled_from(["the", "cat", "sat", "on", "mat", ".", ",", "e\u0301", "\u05e9\u05dc",
                         "\U0001f600", "\x00", "\u202eab", "A", "a", "1,000", "l'\u00e9t\u00e9",
                         "--"])
SENTENCE = st.one_of(
    st.lists(WORDS, max_size=12).map(" ".join),
    st.text(max_size=30),  # anything at all, whitespace and controls included
)
SMOOTH = st.sampled_from(["exp", "floor", "add-k", "none"])
TOKENIZE = st.sampled_from(["13a", "intl", "char", "none"])
FUZZ = settings(max_examples=40, deadline=None)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@FUZZ
@given(pairs=st.lists(st.tuples(SENTENCE, SENTENCE, SENTENCE), min_size=1, max_size=6),
       smooth=SMOOTH,
       tokenize=TOKENIZE, lowercase=st.booleans())
def test_corpus_bleu_equals_sacrebleu(pairs, smooth, tokenize, lowercase):
    hyps = [h for h, _, _ in pairs]
    refs = [[r for _, r, _ in pairs], [r for _, _, r in pairs]]
    ours = corpus_bleu(hyps, refs, tokenize=tokenize, lowercase=lowercase, smooth=smooth)
    theirs = sacrebleu.corpus_bleu(hyps, refs, tokenize=tokenize, lowercase=lowercase,
                                   smooth_method=smooth, force=True)
    assert close(ours.score, theirs.score)
    assert (ours.sys_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert close(ours.bp, theirs.bp)
    # and the same corpus fed in two batches
    incremental = IncrementalBleu(tokenize=tokenize, lowercase=lowercase, smooth=smooth)
    half = len(hyps) // 2
    incremental.add(hyps[:half], [stream[:half] for stream in refs])
    incremental.add(hyps[half:], [stream[half:] for stream in refs])
    assert close(incremental.result().score, theirs.score)


@FUZZ
@given(hyp=SENTENCE, refs=st.lists(SENTENCE, min_size=1, max_size=3), smooth=SMOOTH)
def test_sentence_bleu_equals_sacrebleu(hyp, refs, smooth):
    ours = sentence_bleu(hyp, refs, smooth=smooth)
    theirs = sacrebleu.sentence_bleu(hyp, refs, smooth_method=smooth)
    assert close(ours.score, theirs.score)


def test_very_long_sentences():
    hyp = " ".join(["the cat sat on the mat"] * 5000)
    ref = " ".join(["the cat sat on a mat"] * 5000)
    assert close(corpus_bleu([hyp], [ref]).score, sacrebleu.corpus_bleu([hyp], [[ref]]).score)


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe bad", "invalid UTF-8"),
    (b"a\x00b\n", "binary data"),
    (b"", "file is empty"),
    (b"\x1f\x8b\x08junk", "corrupt gzip"),
])
def test_cli_bleu_answers_bad_files_with_exit_2(tmp_path, capsys, content, message):
    good = tmp_path / "good.txt"
    good.write_text("the cat sat\n")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    for argv in ([str(bad), str(good)], [str(good), str(bad)]):
        assert main(["bleu", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and str(bad) in err
