"""What a tokenizer's vocabulary holds, for inputs a user did not take from the data: the words of
a text it reads as <unk>, and a few of its own tokens as a text to probe. Any tokenizer the
workspace may hold: ours (explorer.data.tokenizers), a user's (explorer.usermodel.tokenizer) or a
Hugging Face one (explorer.hf.tokenizer). Imports nothing heavy.

    unknown_words(tokenizer, "a z q")      # ["z", "q"] for a vocabulary of a to e
    in_vocabulary_text(tokenizer)          # "abcde": the first tokens that are no special token
"""

from __future__ import annotations

FALLBACK_PHRASE = "the quick brown fox"
SHOWN_WORDS = 8  # a note names at most this many
PROBE_TOKENS = 8
SCANNED_IDS = 1000  # a large vocabulary's first ones hold enough plain tokens


def unk_id(tokenizer) -> int | None:
    """The id text outside the vocabulary becomes, or None when there is none."""
    special_id = getattr(tokenizer, "special_id", None)
    if callable(special_id):  # a user's tokenizer: found by name
        return special_id("unk")
    hf = getattr(tokenizer, "hf", None)
    if hf is not None:
        return getattr(hf, "unk_token_id", None)
    from explorer.data.tokenizers import UNK_ID

    return UNK_ID


def unknown_words(tokenizer, text: str) -> list[str]:
    """The whitespace-separated words of `text` with a piece the vocabulary reads as <unk>."""
    unk = unk_id(tokenizer)
    if unk is None:
        return []
    return [word for word in text.split() if unk in tokenizer.encode(word)]


def unknown_note(tokenizer, texts: list[str]) -> str | None:
    """One line naming the words of `texts` read as <unk> (the first SHOWN_WORDS), or None."""
    found: list[str] = []
    for text in texts:
        found += [word for word in unknown_words(tokenizer, text) if word not in found]
    if not found:
        return None
    named = ", ".join(repr(word) for word in found[:SHOWN_WORDS])
    more = f" and {len(found) - SHOWN_WORDS} more" if len(found) > SHOWN_WORDS else ""
    return f"not in the model's vocabulary, read as <unk>: {named}{more}"


def _is_special(token: str) -> bool:
    token = token.strip()
    return not token or (token[0], token[-1]) in (("<", ">"), ("[", "]"))


def in_vocabulary_text(tokenizer) -> str | None:
    """A text of the vocabulary's first PROBE_TOKENS plain tokens (no <pad>, <unk>, [CLS]...),
    written as the tokenizer joins them; None when that text does not read back without <unk>."""
    ids = []
    for index in range(min(tokenizer.vocab_size, SCANNED_IDS)):
        if not _is_special(tokenizer.id_to_token(index)):
            ids.append(index)
            if len(ids) == PROBE_TOKENS:
                break
    text = tokenizer.decode(ids).strip() if ids else ""
    return text if text and not unknown_words(tokenizer, text) else None


def probe_text(tokenizer) -> str:
    """A text every word of which the tokenizer knows: FALLBACK_PHRASE where it does (an English
    vocabulary), else a few of its own tokens."""
    if not unknown_words(tokenizer, FALLBACK_PHRASE):
        return FALLBACK_PHRASE
    return in_vocabulary_text(tokenizer) or FALLBACK_PHRASE
