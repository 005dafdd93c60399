"""Character, word and BPE tokenizers with one interface, saved as JSON.

Every vocabulary starts with the same five special tokens, at fixed ids (`seqmodels.config.PAD_ID`...):

    <pad>=0 <bos>=1 <eos>=2 <unk>=3 <mask>=4

`encode` adds no special tokens (the batching code adds <bos>/<eos> where the architecture's
conventions say so) and `decode` drops them. Vocabularies are built from the training split only;
unseen symbols become <unk>.

A tokenizer is saved as one file, `<dir>/<prefix>_tokenizer.json` (prefix "src" or "tgt" in a
checkpoint), holding its kind and vocabulary; `load_tokenizer(dir, prefix)` reads any kind back.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from explorer.errors import UserError, first_line

# The ids must agree with seqmodels.config (PAD_ID, ...); kept here so data code need not import torch.
# tests/data/test_data_tokenizers.py checks that they do.
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>", "<mask>")
PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = range(len(SPECIAL_TOKENS))
MASK_MARKERS = ("[MASK]", "<mask>")  # what people type; read as the model's own mask token
# Byte-level BPE (GPT-2) writes a word's leading space as "Ġ" and a newline as "Ċ"; SentencePiece
# (Marian, T5) and our BPE write the space as "▁". People read labels: they get the char
# tokenizer's marks.
VISIBLE_MARKS = str.maketrans({"Ġ": "␣", "▁": "␣", "Ċ": "⏎"})
NUM_SPECIAL = len(SPECIAL_TOKENS)
KINDS = ("char", "word", "bpe")

# Words (with inner hyphens/apostrophes, so "dog-SG" and "don't" stay whole) or single punctuation.
WORD_PATTERN = re.compile(r"\w+(?:['\-]\w+)*|[^\w\s]")
# Plot labels for characters that would otherwise be invisible.
VISIBLE = {" ": "␣", "\n": "⏎", "\t": "⇥"}


def _file(directory: str | Path, prefix: str) -> Path:
    return Path(directory) / f"{prefix}_tokenizer.json"


def _most_frequent(counts: Counter, vocab_size: int | None, min_freq: int) -> list[str]:
    """Symbols seen at least `min_freq` times, most frequent first (ties alphabetical)."""
    ranked = sorted((s for s, c in counts.items() if c >= min_freq), key=lambda s: (-counts[s], s))
    if vocab_size is not None:
        if vocab_size <= NUM_SPECIAL:
            raise ValueError(
                f"vocab_size {vocab_size} leaves no room beside {NUM_SPECIAL} special tokens"
            )
        ranked = ranked[: vocab_size - NUM_SPECIAL]
    return ranked


class _VocabTokenizer:
    """A tokenizer that splits text into symbols and looks each up in a fixed vocabulary."""

    kind = ""

    def __init__(self, vocab: Sequence[str] = ()):
        self._set_vocab(vocab)

    def _set_vocab(self, symbols: Sequence[str]) -> None:
        self._id_to_token = list(SPECIAL_TOKENS) + [s for s in symbols if s not in SPECIAL_TOKENS]
        self._token_to_id = {token: i for i, token in enumerate(self._id_to_token)}

    def split(self, text: str) -> list[str]:
        raise NotImplementedError

    def join(self, symbols: list[str]) -> str:
        raise NotImplementedError

    def fit(self, texts: Iterable[str], vocab_size: int | None = None, min_freq: int = 1):
        counts = Counter(symbol for text in texts for symbol in self.split(text))
        self._set_vocab(_most_frequent(counts, vocab_size, min_freq))
        return self

    @classmethod
    def train(
        cls, texts: Iterable[str], vocab_size: int | None = None, min_freq: int = 1, **options
    ):
        return cls(**options).fit(texts, vocab_size=vocab_size, min_freq=min_freq)

    @property
    def vocab_size(self) -> int:
        return len(self._id_to_token)

    def encode(self, text: str) -> list[int]:
        return [self._token_to_id.get(symbol, UNK_ID) for symbol in self.split(text)]

    def decode(self, ids: Iterable[int]) -> str:
        return self.join([self._id_to_token[i] for i in ids if NUM_SPECIAL <= i < self.vocab_size])

    def id_to_token(self, i: int) -> str:
        if not 0 <= i < self.vocab_size:
            raise IndexError(f"token id {i} is outside the vocabulary of {self.vocab_size}")
        return self._id_to_token[i]

    def token_to_id(self, token: str) -> int:
        return self._token_to_id.get(token, UNK_ID)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """One label per id, for plot axes."""
        return [self.id_to_token(int(i)) for i in ids]

    def _state(self) -> dict:
        return {"vocab": self._id_to_token}

    def save(self, directory: str | Path, prefix: str) -> Path:
        path = _file(directory, prefix)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"kind": self.kind, **self._state()}, ensure_ascii=False))
        return path


class CharTokenizer(_VocabTokenizer):
    """One token per character (whitespace included)."""

    kind = "char"

    def split(self, text: str) -> list[str]:
        return list(text)

    def join(self, symbols: list[str]) -> str:
        return "".join(symbols)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        return [VISIBLE.get(token, token) for token in super().tokens(ids)]


class WordTokenizer(_VocabTokenizer):
    """Words and punctuation marks, split on whitespace and punctuation; optionally lowercased."""

    kind = "word"

    def __init__(self, vocab: Sequence[str] = (), lowercase: bool = False):
        super().__init__(vocab)
        self.lowercase = lowercase

    def split(self, text: str) -> list[str]:
        return WORD_PATTERN.findall(text.lower() if self.lowercase else text)

    def join(self, symbols: list[str]) -> str:
        return " ".join(symbols)

    def _state(self) -> dict:
        return {"vocab": self._id_to_token, "lowercase": self.lowercase}


class BPETokenizer:
    """Byte-pair encoding (Hugging Face `tokenizers`); as in SentencePiece "▁" starts a word."""

    kind = "bpe"
    DEFAULT_VOCAB_SIZE = 1000

    def __init__(self, backend=None):
        self._backend = backend  # a tokenizers.Tokenizer, or None until fitted

    def fit(self, texts: Iterable[str], vocab_size: int | None = None, min_freq: int = 1):
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        backend = Tokenizer(models.BPE(unk_token="<unk>"))
        # words become "▁word" pieces, then punctuation is split off so "young," does not become
        # one token; the Metaspace decoder puts the spaces back exactly
        backend.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()]
        )
        backend.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size or self.DEFAULT_VOCAB_SIZE,
            min_frequency=min_freq,
            special_tokens=list(SPECIAL_TOKENS),  # first, so they get ids 0..4
            show_progress=False,
        )
        backend.train_from_iterator(list(texts), trainer=trainer)
        self._backend = backend
        return self

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None, min_freq: int = 1):
        return cls().fit(texts, vocab_size=vocab_size, min_freq=min_freq)

    @property
    def backend(self):
        if self._backend is None:
            raise RuntimeError("BPETokenizer is not trained yet: call fit(texts) first")
        return self._backend

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size()

    def encode(self, text: str) -> list[int]:
        return self.backend.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Iterable[int]) -> str:
        kept = [int(i) for i in ids if NUM_SPECIAL <= int(i) < self.vocab_size]
        return self.backend.decode(kept, skip_special_tokens=True)

    def id_to_token(self, i: int) -> str:
        """The token as a label shows it: a word's start "▁" reads "␣"."""
        token = self.backend.id_to_token(i) if i >= 0 else None
        if token is None:
            raise IndexError(f"token id {i} is outside the vocabulary of {self.vocab_size}")
        return token.translate(VISIBLE_MARKS)

    def token_to_id(self, token: str) -> int:
        """The id of a token written as a label shows it ("␣dog") or as the vocabulary does."""
        found = self.backend.token_to_id(token.replace("␣", "▁"))
        return UNK_ID if found is None else found

    def tokens(self, ids: Iterable[int]) -> list[str]:
        return [self.id_to_token(int(i)) for i in ids]

    def save(self, directory: str | Path, prefix: str) -> Path:
        path = _file(directory, prefix)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = {"kind": self.kind, "backend": json.loads(self.backend.to_str())}
        path.write_text(json.dumps(state, ensure_ascii=False))
        return path


TOKENIZER_CLASSES = {"char": CharTokenizer, "word": WordTokenizer, "bpe": BPETokenizer}


def make_tokenizer(kind: str, texts: Iterable[str], vocab_size: int | None = None,
                   min_freq: int = 1, lowercase: bool = False):
    """A tokenizer of `kind` ("char", "word" or "bpe") fitted on `texts` (the training split)."""
    if kind not in TOKENIZER_CLASSES:
        raise UserError(f"unknown tokenizer {kind!r}; choose one of {', '.join(KINDS)}")
    if kind == "word":
        return WordTokenizer(lowercase=lowercase).fit(texts, vocab_size, min_freq)
    return TOKENIZER_CLASSES[kind]().fit(texts, vocab_size, min_freq)


def _checked_bpe(tokenizer: BPETokenizer) -> BPETokenizer:
    """A crafted backend may load and fail later: ids must be 0..n-1 with the special tokens
    first, and encoding must work (the library checks its unknown token only then)."""
    vocab = tokenizer.backend.get_vocab(with_added_tokens=True)
    if sorted(vocab.values()) != list(range(len(vocab))):
        raise ValueError("token ids are not 0..n-1")
    if [tokenizer.backend.id_to_token(i) for i in range(NUM_SPECIAL)] != list(SPECIAL_TOKENS):
        raise ValueError("special tokens are not at ids 0..4")
    tokenizer.encode("probe \u00e9\U0001f600 ?")
    return tokenizer


def load_tokenizer(directory: str | Path, prefix: str):
    """The tokenizer `save(directory, prefix)` wrote."""
    path = _file(directory, prefix)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        kind = state["kind"]
        if kind == "bpe":
            from tokenizers import Tokenizer

            return _checked_bpe(BPETokenizer(Tokenizer.from_str(json.dumps(state["backend"]))))
        vocab = state["vocab"]
        if list(vocab[:NUM_SPECIAL]) != list(SPECIAL_TOKENS):
            raise ValueError("special tokens are not at ids 0..4")
        if not all(isinstance(token, str) and token for token in vocab):
            raise ValueError("the vocabulary must be a list of non-empty strings")
        if len(set(vocab)) != len(vocab):
            raise ValueError("the vocabulary lists a token twice")
        if kind == "word":
            return WordTokenizer(vocab, lowercase=bool(state.get("lowercase", False)))
        if kind == "char":
            return CharTokenizer(vocab)
        raise ValueError(f"unknown tokenizer kind {kind!r}")
    except FileNotFoundError:
        raise UserError(f"{path}: no such tokenizer file") from None
    except BaseException as exc:  # malformed JSON, missing keys, the tokenizers library's errors
        # (a Rust panic arrives as pyo3's PanicException, a BaseException)
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        reason = first_line(exc)
        raise UserError(f"{path}: not a valid tokenizer file ({reason})") from None
