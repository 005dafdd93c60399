"""The added tokens of a saved fast tokenizer, read without parsing its whole tokenizer.json.

A folder saved by transformers 5 has no `added_tokens_decoder` in tokenizer_config.json, so
`AutoTokenizer.from_pretrained` takes its legacy path: it parses the whole tokenizer.json in
Python's json (a GPT-2-sized vocabulary: ~25 ms, a third of the tokenizer's load) only to read
its "added_tokens" list, before the Rust tokenizer parses the same file again. Handing it those
added tokens as `added_tokens_decoder` (what a folder saved by transformers 4 carries in its
tokenizer_config.json) skips that parse; the tokenizer built is the same (tests/hf/
test_hf_tokenizer_files.py compares it with AutoTokenizer's own for every family's folder).

The shortcut is taken only where the legacy path would read nothing but tokenizer.json's
"added_tokens": no special_tokens_map.json or added_tokens.json beside it (that path reads them
too), and no `fast_tokenizer_files` naming another tokenizer file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_SPACE = re.compile(r"\s*")
_LEGACY_FILES = ("special_tokens_map.json", "added_tokens.json")


def saved_added_tokens(folder: Path) -> dict | None:
    """{id: AddedToken} exactly as transformers' legacy path builds it from tokenizer.json, or
    None where that path would read more than tokenizer.json's added tokens (or cannot be
    followed: then AutoTokenizer's own reading decides, and reports any error)."""
    tokenizer_file = folder / "tokenizer.json"
    if not tokenizer_file.is_file() or any((folder / name).exists() for name in _LEGACY_FILES):
        return None
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        if not isinstance(config, dict) or "added_tokens_decoder" in config \
                or "fast_tokenizer_files" in config:
            return None
        entries = top_level_value(tokenizer_file.read_text(encoding="utf-8"), "added_tokens")
    except (OSError, ValueError):
        return None
    from tokenizers import AddedToken

    added = {}
    try:
        for entry in entries:
            fields = dict(entry)
            index = fields.pop("id")
            added[index] = AddedToken(**fields)
    except (KeyError, TypeError, ValueError):  # not as the tokenizers library writes it
        return None
    return added


def top_level_value(text: str, key: str):
    """The value of `key` in the JSON object `text`, parsing the members before it and no further
    (the tokenizers library writes "added_tokens" before the normalizer and the model, which hold
    the vocabulary). Raises ValueError where `text` is not an object or lacks `key`."""
    decoder = json.JSONDecoder()
    at = _SPACE.match(text).end()
    if text[at:at + 1] != "{":
        raise ValueError("not a JSON object")
    at += 1
    while True:
        at = _SPACE.match(text, at).end()
        if text[at:at + 1] != '"':
            raise ValueError(f"no {key!r}")
        name, at = decoder.raw_decode(text, at)
        at = _SPACE.match(text, at).end()
        if text[at:at + 1] != ":":
            raise ValueError("not a JSON object")
        at = _SPACE.match(text, at + 1).end()
        value, at = decoder.raw_decode(text, at)
        if name == key:
            return value
        at = _SPACE.match(text, at).end()
        if text[at:at + 1] != ",":
            raise ValueError(f"no {key!r}")
        at += 1
