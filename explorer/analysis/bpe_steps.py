"""Byte-pair encoding one merge at a time, on any text (the lecture's "Peter Piper picked a peck
of pickled peppers"): start from the characters of each word, count every adjacent pair inside
the words, merge the most frequent one into a new token, repeat. Words are never merged across
whitespace. Among pairs as frequent as each other, the one that occurs first in the text wins
(a rule of this module: implementations break ties differently). Plain Python, no torch."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import pairwise


@dataclass(frozen=True)
class Merge:
    pair: tuple[str, str]  # the two tokens merged
    count: int  # how often the pair occurred when it was chosen
    words: tuple[tuple[str, ...], ...]  # every word's tokens after the merge

    @property
    def token(self) -> str:
        return "".join(self.pair)

    @property
    def num_tokens(self) -> int:
        return sum(len(word) for word in self.words)


def pair_counts(words: list[tuple[str, ...]]) -> Counter:
    """Adjacent pairs inside each word, in the order they first occur."""
    counts: Counter = Counter()
    for word in words:
        for pair in pairwise(word):
            counts[pair] += 1
    return counts


def merge_word(word: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    """`pair` merged wherever it occurs in `word`, left to right, without overlaps."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def bpe_merges(text: str, merges: int) -> list[Merge]:
    """The first `merges` merges on `text` (fewer when every word is one token)."""
    words = [tuple(word) for word in text.split()]
    steps = []
    for _ in range(merges):
        counts = pair_counts(words)
        if not counts:
            break
        pair, count = max(counts.items(), key=lambda item: item[1])  # the first of the most frequent
        words = [merge_word(word, pair) for word in words]
        steps.append(Merge(pair, count, tuple(words)))
    return steps
