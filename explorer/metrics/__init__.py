"""Metrics: BLEU with its breakdown (sacreBLEU-compatible)."""

from explorer.metrics.bleu import (
    BleuBreakdown,
    IncrementalBleu,
    SentenceExample,
    corpus_bleu,
    matched_ngrams,
    sentence_bleu,
    sentence_example,
)

__all__ = [
    "BleuBreakdown",
    "IncrementalBleu",
    "SentenceExample",
    "corpus_bleu",
    "matched_ngrams",
    "sentence_bleu",
    "sentence_example",
]
