"""The user's tokenizer behind the interface of explorer.data.tokenizers.

Accepted: a Hugging Face tokenizer (transformers), a `tokenizers.Tokenizer`, or a list of token
strings (the vocabulary; id = index) with a split rule: "whitespace", "chars" or a function
text -> list of tokens. Ids are the user's own. `encode(text)` gives the plain ids, plus the end
token when `source_eos` (a seq2seq source: the model was trained on `tokens + [<eos>]`), so
`adds_special_tokens` tells explorer.decoding to add nothing; `encode_target` ends in the end token.
"""

from __future__ import annotations

import json
from pathlib import Path

from explorer.errors import UserError

ACCEPTED = ("a Hugging Face tokenizer, a tokenizers.Tokenizer, or a list of token strings (the "
            "vocabulary) with split='whitespace', 'chars' or a function")
SPLITS = ("whitespace", "chars")
# special tokens looked up by name when the adapter does not say them (first match wins)
SPECIAL_NAMES = {
    "bos": ("<bos>", "<sos>", "<s>", "[CLS]", "SOS"),
    "eos": ("<eos>", "</s>", "[SEP]", "EOS", "<|endoftext|>"),
    "pad": ("<pad>", "[PAD]", "PAD"),
    "unk": ("<unk>", "[UNK]", "UNK"),
}


class UserTokenizer:
    """Common part: ids <-> tokens through `_encode`, `_token`, `vocab_size`."""

    adds_special_tokens = True
    kind = "user"

    def __init__(self, source_eos: bool = False) -> None:
        self.source_eos = source_eos
        self.eos_id: int | None = self.special_id("eos")

    def special_id(self, role: str) -> int | None:
        for name in SPECIAL_NAMES[role]:
            index = self.token_to_id(name)
            if index is not None:
                return index
        return None

    def as_source(self) -> "UserTokenizer":
        """The same tokenizer, encoding a seq2seq source (`tokens + [<eos>]`)."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__, source_eos=True)
        return twin

    def encode(self, text: str) -> list[int]:
        ids = self.ids(text)
        return ids + [self.eos_id] if self.source_eos and self.eos_id is not None else ids

    def encode_target(self, text: str) -> list[int]:
        ids = self.ids(text)
        return ids + [self.eos_id] if self.eos_id is not None else ids

    def id_to_token(self, index: int) -> str:
        return self.tokens([index])[0]

    def decode(self, ids) -> str:
        specials = {self.special_id(role) for role in SPECIAL_NAMES} - {None}
        return self.join([t for i, t in zip(ids, self.tokens(ids)) if int(i) not in specials])


class VocabTokenizer(UserTokenizer):
    kind = "user-vocab"

    def __init__(self, vocab: list[str], split="whitespace", source_eos: bool = False) -> None:
        if not all(isinstance(token, str) for token in vocab) or not vocab:
            raise UserError(f"tokenizer: a vocabulary must be a non-empty list of strings; "
                            f"accepted: {ACCEPTED}")
        if not (split in SPLITS or callable(split)):
            raise UserError(f"tokenizer: split must be 'whitespace', 'chars' or a function, got "
                            f"{split!r}")
        self.vocab = list(vocab)
        self.index = {token: i for i, token in enumerate(self.vocab)}
        self.split = split
        super().__init__(source_eos)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_to_id(self, token: str) -> int | None:
        return self.index.get(token)

    def ids(self, text: str) -> list[int]:
        if self.split == "whitespace":
            pieces = text.split()
        elif self.split == "chars":
            pieces = list(text)
        else:
            pieces = list(self.split(text))
        unk = self.special_id("unk")
        ids = [self.index.get(piece, unk) for piece in pieces]
        if None in ids:
            missing = pieces[ids.index(None)]
            raise UserError(f"tokenizer: {missing!r} is not in the vocabulary, which has no <unk>")
        return ids

    def tokens(self, ids) -> list[str]:
        return [self.vocab[int(i)] if 0 <= int(i) < len(self.vocab) else f"<id {int(i)}>"
                for i in ids]

    def join(self, tokens: list[str]) -> str:
        return "".join(tokens) if self.split == "chars" else " ".join(tokens)

    def save(self, directory, prefix: str) -> Path:
        path = Path(directory) / f"{prefix}_tokenizer.json"
        split = self.split if isinstance(self.split, str) else "function"
        path.write_text(json.dumps({"kind": self.kind, "vocab": self.vocab, "split": split},
                                   ensure_ascii=False), encoding="utf-8")
        return path


class TokenizersTokenizer(UserTokenizer):
    """A `tokenizers.Tokenizer` (the Rust library), ids without its post-processor's specials."""

    kind = "user-tokenizers"

    def __init__(self, backend, source_eos: bool = False) -> None:
        self.backend = backend
        super().__init__(source_eos)

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def ids(self, text: str) -> list[int]:
        return list(self.backend.encode(text, add_special_tokens=False).ids)

    def tokens(self, ids) -> list[str]:
        return [self.backend.id_to_token(int(i)) or f"<id {int(i)}>" for i in ids]

    def decode(self, ids) -> str:
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=True)

    def save(self, directory, prefix: str) -> Path:
        path = Path(directory) / f"{prefix}_tokenizer.json"
        path.write_text(json.dumps({"kind": self.kind, "backend": json.loads(
            self.backend.to_str())}, ensure_ascii=False), encoding="utf-8")
        return path


def as_tokenizer(tokenizer, split=None):
    """The explorer's tokenizer interface on what the user gave; a one-line UserError naming what
    is accepted otherwise."""
    if isinstance(tokenizer, UserTokenizer) or _is_ours(tokenizer):
        return tokenizer
    if isinstance(tokenizer, (list, tuple)):
        if split is None:  # single characters with " " among them can only mean characters
            split = "chars" if _characters(tokenizer) else "whitespace"
        return VocabTokenizer(list(tokenizer), split)
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - a dependency of transformers and of the app
        Tokenizer = ()
    if isinstance(tokenizer, Tokenizer):
        return TokenizersTokenizer(tokenizer)
    if _is_hf_tokenizer(tokenizer):
        from explorer.hf.tokenizer import HFTokenizer

        return HFTokenizer(tokenizer)
    raise UserError(f"tokenizer: got {type(tokenizer).__module__}.{type(tokenizer).__qualname__};"
                    f" accepted: {ACCEPTED}")


def _characters(vocab) -> bool:
    """A character vocabulary: " " is a token, and every token but the named specials
    (<pad>, [SEP], ...) is one character."""
    specials = {name for names in SPECIAL_NAMES.values() for name in names}
    return " " in vocab and all(isinstance(t, str) and (len(t) == 1 or t in specials)
                                for t in vocab)


def _is_ours(tokenizer) -> bool:
    """One of explorer.data.tokenizers' (char, word, bpe) or an explorer.hf HFTokenizer."""
    from explorer.data.tokenizers import BPETokenizer, CharTokenizer, WordTokenizer
    from explorer.hf.tokenizer import HFTokenizer

    return isinstance(tokenizer, (BPETokenizer, CharTokenizer, WordTokenizer, HFTokenizer))


def _is_hf_tokenizer(tokenizer) -> bool:
    try:
        from transformers import PreTrainedTokenizerBase
    except ImportError:
        return False
    return isinstance(tokenizer, PreTrainedTokenizerBase)


def special_ids(tokenizer, bos=None, eos=None, pad=None) -> tuple[int, int, int]:
    """(start, eos, pad) ids: as given (an id or a token string), else looked up by name."""
    def resolve(value, role: str, fallback: int) -> int:
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            index = _token_id(tokenizer, value)
            if index is None:
                raise UserError(f"{role}: {value!r} is not a token of the tokenizer")
            return index
        for name in SPECIAL_NAMES[role]:
            index = _token_id(tokenizer, name)
            if index is not None:
                return index
        return fallback

    from explorer.data.tokenizers import BOS_ID, EOS_ID, PAD_ID

    hf = getattr(tokenizer, "hf", None)
    if hf is not None and bos is None and eos is None:  # a Hugging Face tokenizer says its own
        start = hf.bos_token_id if hf.bos_token_id is not None else hf.eos_token_id
        end = hf.eos_token_id
        padding = hf.pad_token_id if hf.pad_token_id is not None else end
        if start is not None and end is not None:
            return start, end, padding if pad is None else resolve(pad, "pad", padding)
    return (resolve(bos, "bos", BOS_ID), resolve(eos, "eos", EOS_ID), resolve(pad, "pad", PAD_ID))


def _token_id(tokenizer, token: str) -> int | None:
    if hasattr(tokenizer, "token_to_id"):
        return tokenizer.token_to_id(token)
    hf = getattr(tokenizer, "hf", None)
    if hf is not None:
        index = hf.convert_tokens_to_ids(token)
        return None if index == hf.unk_token_id and token != hf.unk_token else index
    index = getattr(tokenizer, "index", None) or getattr(tokenizer, "stoi", None)
    if isinstance(index, dict):
        return index.get(token)
    try:
        ids = tokenizer.encode(token)
    except Exception:  # noqa: BLE001 - a token it cannot encode is not one of its specials
        return None
    return ids[0] if len(ids) == 1 and tokenizer.id_to_token(ids[0]) == token else None
