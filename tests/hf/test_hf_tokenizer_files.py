"""The tokenizer opened with its added tokens read ahead (explorer/hf/tokenizer_files.py) is the
tokenizer AutoTokenizer loads on its own: the same class, added and special tokens, vocabulary,
ids, decoded text and saved files, for every family's folder."""

from __future__ import annotations

import json
import warnings

import pytest

from explorer.hf.tokenizer_files import saved_added_tokens, top_level_value

TEXTS = ["the cat sat on the mat", "die katze sitzt  auf der matte\n", "unseen wörds, ünïcode!",
         "the <extra> bird sang<x> a song", ""]


@pytest.fixture(scope="module")
def gpt2_with_added(tmp_path_factory, hf_models):
    """A GPT-2 folder whose tokenizer has a normal and a special added token beyond the BPE's."""
    from tokenizers import AddedToken
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("gpt2-added")
    source = hf_models("gpt2")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes((source / name).read_bytes())
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    tokenizer.add_tokens(["<extra>"])
    tokenizer.add_tokens([AddedToken("<x>", lstrip=True, special=True)], special_tokens=True)
    tokenizer.save_pretrained(folder)
    return folder


def _both(folder):
    from transformers import AutoConfig, AutoTokenizer

    import explorer.hf.loader as loader

    transformers = loader.import_transformers(str(folder))
    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    with warnings.catch_warnings():  # Marian's "Recommended: pip install sacremoses"
        warnings.simplefilter("ignore")
        theirs = AutoTokenizer.from_pretrained(str(folder), config=config, local_files_only=True)
    return loader.load_tokenizer(folder, config, str(folder), transformers), theirs


def _saved(tokenizer, folder) -> dict:
    tokenizer.save_pretrained(folder)
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("family", ["gpt2", "bert", "distilbert", "t5", "marian", "added"])
def test_the_same_tokenizer_as_autotokenizer(family, hf_models, gpt2_with_added, tmp_path):
    folder = gpt2_with_added if family == "added" else hf_models(family)
    # the folders saved by transformers 5 with a tokenizer.json take the shortcut; Marian's
    # sentencepiece files have no tokenizer.json and load as before
    assert (saved_added_tokens(folder) is None) == (family == "marian")
    ours, theirs = _both(folder)
    assert type(ours) is type(theirs)
    assert {i: repr(t) for i, t in ours.added_tokens_decoder.items()} == \
        {i: repr(t) for i, t in theirs.added_tokens_decoder.items()}
    assert ours.special_tokens_map == theirs.special_tokens_map
    assert ours.all_special_ids == theirs.all_special_ids
    assert ours.get_vocab() == theirs.get_vocab() and len(ours) == len(theirs)
    for text in TEXTS:
        ids = theirs(text)["input_ids"]
        assert ours(text)["input_ids"] == ids
        assert ours(text_target=text)["input_ids"] == theirs(text_target=text)["input_ids"]
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == \
                theirs.decode(ids, skip_special_tokens=skip)
    (tmp_path / "ours").mkdir()
    (tmp_path / "theirs").mkdir()
    assert _saved(ours, tmp_path / "ours") == _saved(theirs, tmp_path / "theirs")


def test_added_tokens_are_read(gpt2_with_added):
    added = saved_added_tokens(gpt2_with_added)
    by_text = {token.content: (index, token) for index, token in added.items()}
    assert {"<|endoftext|>", "<extra>", "<x>"} <= set(by_text)
    assert by_text["<x>"][1].special and by_text["<x>"][1].lstrip
    assert not by_text["<extra>"][1].special
    listed = json.loads((gpt2_with_added / "tokenizer.json").read_text())["added_tokens"]
    assert sorted(added) == sorted(entry["id"] for entry in listed)


@pytest.mark.parametrize("text", [
    '{"a": 1, "added_tokens": [{"id": 0}], "model": {"vocab": {"added_tokens": 2}}}',
    ' {\n "nested": {"added_tokens": "no"} ,\n\t"added_tokens" : [] }',
    '{"model": {"x": [1, 2, {"y": null}]}, "added_tokens": [1, "two"]}',
])
def test_top_level_value_is_jsons(text):
    assert top_level_value(text, "added_tokens") == json.loads(text)["added_tokens"]


@pytest.mark.parametrize("text", ['{"model": {"added_tokens": []}}', "[1, 2]", "{}", '{"a": 1 '])
def test_top_level_value_missing(text):
    with pytest.raises(ValueError):
        top_level_value(text, "added_tokens")


def test_legacy_files_keep_autotokenizers_own_path(gpt2_with_added, tmp_path):
    """A special_tokens_map.json beside tokenizer.json is read by the legacy path: no shortcut."""
    for path in gpt2_with_added.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    assert saved_added_tokens(tmp_path) is not None
    (tmp_path / "special_tokens_map.json").write_text('{"pad_token": "<extra>"}')
    assert saved_added_tokens(tmp_path) is None
    ours, theirs = _both(tmp_path)
    assert ours.pad_token == theirs.pad_token == "<extra>"
