"""Tokenizers: fixed special ids, round trips, vocabulary limits, save/load of every kind."""

import json

import pytest

import seqmodels.config as model_config
from explorer.data import tokenizers as tk
from explorer.data.tokenizers import (
    BPETokenizer,
    CharTokenizer,
    WordTokenizer,
    load_tokenizer,
    make_tokenizer,
)
from explorer.errors import UserError

TRAIN = [
    "the cat sat on the mat.",
    "The dog, the cat and the bird!",
    "a dog-SG big cat-SG a see-3SG",
    "don't (stop) the music",
] * 5


def all_kinds():
    return [CharTokenizer.train(TRAIN), WordTokenizer.train(TRAIN), BPETokenizer.train(TRAIN, 80)]


def test_special_ids_agree_with_models_config():
    assert (tk.PAD_ID, tk.BOS_ID, tk.EOS_ID, tk.UNK_ID, tk.MASK_ID) == (
        model_config.PAD_ID, model_config.BOS_ID, model_config.EOS_ID, model_config.UNK_ID,
        model_config.MASK_ID)


@pytest.mark.parametrize("tokenizer", all_kinds(), ids=lambda t: t.kind)
def test_specials_fixed_and_round_trip(tokenizer):
    assert [tokenizer.id_to_token(i) for i in range(5)] == list(tk.SPECIAL_TOKENS)
    assert [tokenizer.token_to_id(t) for t in tk.SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    text = "the cat sat on the mat."
    ids = tokenizer.encode(text)
    assert ids and all(i >= 5 for i in ids)  # no specials added, nothing unknown
    expected = "the cat sat on the mat ." if tokenizer.kind == "word" else text
    assert tokenizer.decode(ids) == expected
    # decode drops specials wherever they are
    assert tokenizer.decode([tk.BOS_ID, *ids, tk.EOS_ID, tk.PAD_ID, tk.PAD_ID]) == expected
    assert len(tokenizer.tokens(ids)) == len(ids)
    with pytest.raises(IndexError):
        tokenizer.id_to_token(tokenizer.vocab_size)


def test_char_tokenizer_vocabulary_and_labels():
    tokenizer = CharTokenizer.train(["aab", "abc"])
    # by falling frequency: a (3), b (2), c (1)
    assert [tokenizer.id_to_token(i) for i in range(5, 8)] == ["a", "b", "c"]
    assert tokenizer.encode("cabz") == [7, 5, 6, tk.UNK_ID]
    assert CharTokenizer.train(["aab", "abc"], vocab_size=7).vocab_size == 7
    assert CharTokenizer.train(["aab", "abc"], min_freq=2).encode("abc") == [5, 6, tk.UNK_ID]
    spaced = CharTokenizer.train(["a b\n"])
    assert spaced.tokens(spaced.encode("a b\n")) == ["a", "␣", "b", "⏎"]
    with pytest.raises(ValueError, match="no room"):
        CharTokenizer.train(["abc"], vocab_size=5)


def test_word_tokenizer_splits_punctuation_keeps_hyphenated_words_and_lowercases():
    tokenizer = WordTokenizer.train(TRAIN, lowercase=True)
    assert tokenizer.split("The dog, don't stop! dog-SG") == [
        "the", "dog", ",", "don't", "stop", "!", "dog-sg"]
    assert tokenizer.decode(tokenizer.encode("The Dog, THE CAT!")) == "the dog , the cat !"
    cased = WordTokenizer.train(TRAIN)
    assert cased.encode("zebra")[0] == tk.UNK_ID
    assert cased.token_to_id("zebra") == tk.UNK_ID
    assert cased.tokens(cased.encode("the cat-SG")) == ["the", "cat-SG"]


def test_bpe_merges_frequent_pairs_and_decodes_spaces():
    tokenizer = BPETokenizer.train(TRAIN, vocab_size=120)
    ids = tokenizer.encode("the cat sat")
    assert len(ids) < len("the cat sat")  # merges happened
    assert tokenizer.tokens(ids)[0].startswith("␣")  # a word start is marked, shown as labels show it
    assert tokenizer.decode(ids) == "the cat sat"
    assert tokenizer.vocab_size <= 120
    assert tokenizer.tokens(tokenizer.encode("zzz")) == ["␣", "<unk>", "<unk>", "<unk>"]
    # punctuation is split off words, yet decoding restores the text exactly
    text = "the dog, the cat! don't (stop) the bird."
    assert "," in tokenizer.tokens(tokenizer.encode(text))
    assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.parametrize("tokenizer", all_kinds(), ids=lambda t: t.kind)
def test_save_and_load_round_trip(tmp_path, tokenizer):
    path = tokenizer.save(tmp_path, "tgt")
    assert path == tmp_path / "tgt_tokenizer.json"
    assert json.loads(path.read_text())["kind"] == tokenizer.kind
    loaded = load_tokenizer(tmp_path, "tgt")
    assert type(loaded) is type(tokenizer) and loaded.vocab_size == tokenizer.vocab_size
    for text in ["The dog, the cat!", "a big cat-SG"]:
        assert loaded.encode(text) == tokenizer.encode(text)
    ids = list(range(tokenizer.vocab_size))
    assert loaded.tokens(ids) == tokenizer.tokens(ids)


def test_word_lowercase_survives_save(tmp_path):
    WordTokenizer.train(TRAIN, lowercase=True).save(tmp_path, "src")
    assert load_tokenizer(tmp_path, "src").encode("THE") == load_tokenizer(tmp_path, "src").encode(
        "the")


def test_loading_missing_or_bad_files_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="src_tokenizer.json: no such tokenizer file"):
        load_tokenizer(tmp_path, "src")
    (tmp_path / "src_tokenizer.json").write_text('{"kind": "char", "vocab": ["a", "b"]}')
    with pytest.raises(UserError, match="not a valid tokenizer file"):
        load_tokenizer(tmp_path, "src")
    (tmp_path / "src_tokenizer.json").write_text("{not json")
    with pytest.raises(UserError, match="not a valid tokenizer file"):
        load_tokenizer(tmp_path, "src")


def test_make_tokenizer_by_kind():
    assert make_tokenizer("word", TRAIN, lowercase=True).lowercase
    assert make_tokenizer("bpe", TRAIN, vocab_size=60).kind == "bpe"
    with pytest.raises(UserError, match="unknown tokenizer"):
        make_tokenizer("sentencepiece", TRAIN)


def test_bpe_token_given_as_its_label_or_its_vocabulary_entry():
    """Labels show a word start as "␣"; a token typed either way (a contrast, a forced token) is
    the same id, and an unknown one is <unk>."""
    from explorer.analysis.attribution_input import token_id

    tokenizer = BPETokenizer.train(TRAIN, vocab_size=120)
    label = tokenizer.tokens(tokenizer.encode("the cat"))[0]
    assert label.startswith("␣") and "▁" not in label
    index = tokenizer.backend.token_to_id(label.replace("␣", "▁"))
    assert tokenizer.token_to_id(label) == tokenizer.token_to_id(label.replace("␣", "▁")) == index
    assert token_id(tokenizer, label) == token_id(tokenizer, label.replace("␣", "▁")) == index
    assert tokenizer.token_to_id("␣zzzz") == tk.UNK_ID
    with pytest.raises(UserError, match="not in the model's vocabulary"):
        token_id(tokenizer, "␣zzzz")
