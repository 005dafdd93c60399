"""Fuzzed files through every reader and tokenizer: random bytes, random Unicode (combining marks,
right-to-left text, emoji, NUL), very long lines and empty files. What reads must round-trip; the
rest must be a one-line UserError naming the file."""

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from explorer.data import readers
from explorer.data.tokenizers import (
    NUM_SPECIAL, SPECIAL_TOKENS, BPETokenizer, CharTokenizer, WordTokenizer, load_tokenizer,
)
from explorer.errors import UserError

FUZZ = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

# Unicode the lecture data never has but users' files do: combining marks, RTL, emoji, controls
SPICE = st.sampled_from(["\u0301", "\u05d0\u05d1", "\u0627\u0644", "\u202e", "\U0001f600",
                         "\U0001f469\u200d\U0001f4bb", "\x00", "\t", "\r", "\u2028", "\ufeff",
                         "e\u0301", " ", "\x0b", "x" * 5000])
TEXT = st.lists(st.one_of(st.text(max_size=20), SPICE), max_size=12).map("".join)


def one_line_user_error(exc: UserError, path) -> None:
    message = str(exc)
    assert "\n" not in message and message.startswith(str(path)), message


def write(folder: Path, data: bytes, suffix: str = ".txt") -> Path:
    """Each example overwrites the files of the one before (hypothesis shares tmp_path)."""
    path = folder / f"data{suffix}"
    path.write_bytes(data)
    return path


READERS = {
    "read_lines": readers.read_lines,
    "read_text": readers.read_text,
    "read_tsv": readers.read_tsv,
    "read_parallel": lambda path: readers.read_parallel(path, path),
}


@pytest.mark.parametrize("name", READERS)
@FUZZ
@given(data=st.binary(max_size=300), gz=st.booleans())
@example(data=b"", gz=False)
@example(data=b"\xff\xfe\x00a", gz=False)
@example(data=b"\x1f\x8b\x08garbage", gz=False)
def test_random_bytes_read_or_fail_in_one_line(tmp_path, name, data, gz):
    path = write(tmp_path, gzip.compress(data) if gz else data, ".gz" if gz else ".txt")
    try:
        result = READERS[name](path)
    except UserError as exc:
        one_line_user_error(exc, path)
        return
    assert isinstance(result, list)
    text = data.decode("utf-8")  # whatever read must have been UTF-8
    assert "\x00" not in text


@FUZZ
@given(text=TEXT)
def test_unicode_lines_round_trip(tmp_path, text):
    path = write(tmp_path, text.encode("utf-8"))
    try:
        lines = readers.read_lines(path)
    except UserError as exc:
        one_line_user_error(exc, path)
        assert text == "" or "\x00" in text
        return
    expected = text.removeprefix("\ufeff")
    expected = expected[:-1] if expected.endswith("\n") else expected
    assert "\n".join(lines) == "\n".join(line.removesuffix("\r") for line in expected.split("\n")) \
        or expected == ""


@FUZZ
@given(pairs=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6))
def test_tsv_and_parallel_files_agree_or_fail_in_one_line(tmp_path, pairs):
    # a byte-order mark only counts at the start of a file: keep it out of the sentences
    pairs = [(s.replace("\ufeff", ""), t.replace("\ufeff", "")) for s, t in pairs]
    clean = [(s.replace("\t", " ").replace("\n", " ").replace("\r", " "),
              t.replace("\t", " ").replace("\n", " ").replace("\r", " ")) for s, t in pairs]
    tsv = write(tmp_path, "".join(f"{s}\t{t}\n" for s, t in clean).encode("utf-8"), ".tsv")
    src = write(tmp_path, "".join(f"{s}\n" for s, _ in clean).encode("utf-8"), ".src")
    tgt = write(tmp_path, "".join(f"{t}\n" for _, t in clean).encode("utf-8"), ".tgt")
    outcomes = []
    for read in (lambda: readers.read_tsv(tsv), lambda: readers.read_parallel(src, tgt)):
        try:
            outcomes.append(read())
        except UserError as exc:
            assert "\n" not in str(exc)
            outcomes.append("error")
    if "error" not in outcomes:
        assert outcomes[0] == outcomes[1]
        # kept pairs are the stripped non-blank ones, in order
        kept = [(s.strip(), t.strip()) for s, t in clean if s.strip() and t.strip()]
        if "\ufeff" not in clean[0][0] and "\u2028" not in "".join(s + t for s, t in clean):
            assert outcomes[0] == kept


def test_very_long_lines_and_empty_files(tmp_path):
    long_line = "ab\u0301c " * 200_000  # 1 MB in one line
    path = tmp_path / "long.txt"
    path.write_text(long_line + "\n", encoding="utf-8")
    assert readers.read_text(path) == [long_line]
    tsv = tmp_path / "long.tsv"
    tsv.write_text(f"{long_line}\t{long_line}\n", encoding="utf-8")
    assert readers.read_tsv(tsv) == [(long_line.strip(), long_line.strip())]
    for empty in ("", "\n\n  \n", "\ufeff"):
        path = tmp_path / "empty.txt"
        path.write_text(empty, encoding="utf-8")
        for name, read in READERS.items():
            if name == "read_lines":
                continue
            with pytest.raises(UserError) as info:
                read(path)
            one_line_user_error(info.value, path)


# -- tokenizers ------------------------------------------------------------------------------------


@FUZZ
@given(texts=st.lists(TEXT, min_size=1, max_size=5))
def test_char_tokenizer_round_trips_what_it_was_fitted_on(tmp_path, texts):
    tokenizer = CharTokenizer.train(texts)
    for text in texts:
        ids = tokenizer.encode(text)
        assert all(NUM_SPECIAL <= i < tokenizer.vocab_size for i in ids)
        assert tokenizer.decode(ids) == text
    folder = tmp_path
    tokenizer.save(folder, "tgt")
    loaded = load_tokenizer(folder, "tgt")
    assert [loaded.encode(t) for t in texts] == [tokenizer.encode(t) for t in texts]
    assert len(tokenizer.tokens(range(tokenizer.vocab_size))) == tokenizer.vocab_size


@FUZZ
@given(texts=st.lists(TEXT, min_size=1, max_size=5), lowercase=st.booleans())
def test_word_tokenizer_round_trips_its_words(tmp_path, texts, lowercase):
    tokenizer = WordTokenizer(lowercase=lowercase).fit(texts)
    for text in texts:
        words = tokenizer.split(text)
        assert tokenizer.decode(tokenizer.encode(text)) == " ".join(words)
    folder = tmp_path
    tokenizer.save(folder, "src")
    loaded = load_tokenizer(folder, "src")
    assert [loaded.encode(t) for t in texts] == [tokenizer.encode(t) for t in texts]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXT, min_size=1, max_size=5))
def test_bpe_tokenizer_never_crashes_and_round_trips_plain_words(tmp_path, texts):
    tokenizer = BPETokenizer.train(texts + ["plain words here"], vocab_size=300)
    for text in texts:
        ids = tokenizer.encode(text)
        assert all(0 <= i < tokenizer.vocab_size for i in ids)
        assert isinstance(tokenizer.decode(ids), str)
    # single-spaced words it has seen come back exactly
    assert tokenizer.decode(tokenizer.encode("plain words here")) == "plain words here"
    folder = tmp_path
    tokenizer.save(folder, "tgt")
    assert load_tokenizer(folder, "tgt").encode(texts[0]) == tokenizer.encode(texts[0])


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)


@FUZZ
@given(state=st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"kind": st.sampled_from(["char", "word", "bpe", "x"])},
                          optional={"vocab": JSON_VALUES, "lowercase": JSON_VALUES,
                                    "backend": JSON_VALUES}),
    st.fixed_dictionaries({"kind": st.sampled_from(["char", "word"]),
                           "vocab": st.lists(st.one_of(TEXT, JSON_VALUES), max_size=8).map(
                               lambda v: [*SPECIAL_TOKENS, *v])}),
))
@example(state={"kind": "char", "vocab": [*SPECIAL_TOKENS, "a", 5, None]})  # decode crashed
@example(state={"kind": "word", "vocab": [*SPECIAL_TOKENS, "a", "a"]})
def test_crafted_tokenizer_files_load_or_fail_in_one_line(tmp_path, state):
    folder = tmp_path
    path = folder / "tgt_tokenizer.json"
    path.write_text(json.dumps(state), encoding="utf-8")
    try:
        tokenizer = load_tokenizer(folder, "tgt")
    except UserError as exc:
        one_line_user_error(exc, path)
        return
    ids = tokenizer.encode("abc def")
    assert all(0 <= i < tokenizer.vocab_size for i in ids)
    tokenizer.decode(list(range(tokenizer.vocab_size + 3)))


@FUZZ
@given(data=st.binary(max_size=200))
def test_tokenizer_files_of_random_bytes_fail_in_one_line(tmp_path, data):
    folder = tmp_path
    (folder / "tgt_tokenizer.json").write_bytes(data)
    with pytest.raises(UserError) as info:
        load_tokenizer(folder, "tgt")
    one_line_user_error(info.value, folder / "tgt_tokenizer.json")


def crafted_bpe(change) -> dict:
    backend = json.loads(BPETokenizer.train(["hello world", "plain words"], vocab_size=60)
                         .backend.to_str())
    change(backend)
    return {"kind": "bpe", "backend": backend}


@pytest.mark.parametrize("change", [
    lambda b: b["model"].update(unk_token="nope"),  # loaded, then every encode raised
    lambda b: b["model"]["vocab"].update(zz=10**12),
    lambda b: b["model"]["vocab"].update(zz=5000),  # a gap in the ids
    lambda b: b["model"]["vocab"].update({"<pad>": 40, "o": 0}),  # specials moved
    lambda b: b["model"].update(merges=[["q", "r"]]),
    lambda b: b.update(added_tokens=[{"id": 999999, "content": "x"}]),
], ids=["unknown-unk", "huge-id", "gap", "specials-moved", "bad-merge", "bad-added-token"])
def test_crafted_bpe_files_fail_in_one_line(tmp_path, change):
    path = tmp_path / "tgt_tokenizer.json"
    path.write_text(json.dumps(crafted_bpe(change)), encoding="utf-8")
    with pytest.raises(UserError) as info:
        load_tokenizer(tmp_path, "tgt")
    one_line_user_error(info.value, path)
