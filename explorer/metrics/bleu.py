"""BLEU with its breakdown, on top of sacreBLEU, so the numbers are exactly sacreBLEU's.

BLEU (Papineni et al., 2002) as in the lecture notes:

    p_n  = clipped n-gram matches / hypothesis n-grams         (clipped: a hypothesis n-gram counts
                                                                at most as often as it occurs in
                                                                the reference that has most of it)
    BP   = 1 if c > r else exp(1 - r / c)                      (c = hypothesis length, r = the
                                                                closest reference length)
    BLEU = BP * (p_1 * p_2 * p_3 * p_4) ** (1/4)

Corpus BLEU sums the match counts, totals and lengths over all sentences before dividing, which is
why `IncrementalBleu` only needs to keep those sums. The default smoothing is sacreBLEU's `exp`
(a zero p_n becomes 1 / (2^k * total_n) for the k-th zero).

References follow sacreBLEU: `references` is a list of reference *streams*, each as long as the
hypotheses (`[[ref_a_1, ref_a_2, ...], [ref_b_1, ...]]`); a plain list of strings is taken as one
stream. A reference may be None for a sentence that has fewer references than others.

This module imports no torch, so `explorer bleu` starts as fast as sacreBLEU's own command.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence, Union

from sacrebleu.metrics.bleu import BLEU, MAX_NGRAM_ORDER

SMOOTH_METHODS = tuple(BLEU.SMOOTH_DEFAULTS)  # none, floor, add-k, exp
TOKENIZERS = ("13a", "intl", "char", "none", "zh")  # those that need no extra packages

References = Union[Sequence[str], Sequence[Sequence[Optional[str]]]]


@dataclass
class BleuBreakdown:
    """A BLEU score with everything it is computed from. Precisions and score are in 0..100."""

    score: float
    # Raw clipped matches and hypothesis n-grams, n = 1..max_order. (With add-k smoothing
    # sacreBLEU reports these plus k for n > 1; here they stay raw and `precisions` are smoothed.)
    counts: list[int]
    totals: list[int]
    precisions: list[float]  # 100 * counts / totals (smoothed where a count is zero)
    bp: float  # brevity penalty
    sys_len: int  # c: hypothesis tokens
    ref_len: int  # r: closest reference tokens, summed over sentences
    signature: str  # sacreBLEU's reproducibility signature

    @property
    def ratio(self) -> float:
        return self.sys_len / self.ref_len if self.ref_len else 0.0

    def format(self, width: int = 2) -> str:
        """sacreBLEU's line: `BLEU = 34.12 65.2/40.1/27.3/19.0 (BP = 1.000 ratio = ...)`."""
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        return (
            f"BLEU = {self.score:.{width}f} {prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
            f"hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})"
        )

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class SentenceExample:
    """One hypothesis against one reference, with the hypothesis n-grams that matched."""

    hyp_tokens: list[str]
    ref_tokens: list[str]
    # (n, start token index, tokens) of every matched (clipped) hypothesis n-gram
    matched: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)


def _metric(
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth: str = "exp",
    smooth_value: float | None = None,
    max_order: int = MAX_NGRAM_ORDER,
    effective_order: bool = False,
) -> BLEU:
    if smooth not in SMOOTH_METHODS:
        raise ValueError(f"unknown smoothing {smooth!r}; choose one of {', '.join(SMOOTH_METHODS)}")
    if tokenize not in BLEU.TOKENIZERS:
        choices = ", ".join(TOKENIZERS)
        raise ValueError(f"unknown BLEU tokenizer {tokenize!r}; choose one of {choices}")
    metric = BLEU(
        lowercase=lowercase,
        tokenize=tokenize,
        smooth_method=smooth,
        smooth_value=smooth_value,
        max_ngram_order=max_order,
        effective_order=effective_order,
        force=True,  # no "forgot to detokenize?" warnings: model output is often pre-tokenised
    )
    # sacreBLEU's tokenizers memoise __call__ in a class-wide lru_cache keyed by (self, line): a
    # new tokenizer per metric stays referenced by the cache and never hits it, so every BLEU
    # computed (each evaluation, each compare) added a tokenizer and its lines to the process.
    # One tokenizer per kind, shared, is stateless apart from that cache.
    metric.tokenizer = _SHARED_TOKENIZERS.setdefault(type(metric.tokenizer), metric.tokenizer)
    return metric


_SHARED_TOKENIZERS: dict[type, object] = {}


def _as_streams(references: References) -> list[list[Optional[str]]]:
    if not len(references) or references[0] is None or isinstance(references[0], str):
        return [list(references)]  # one stream (an empty list is one empty stream)
    return [list(stream) for stream in references]  # type: ignore[union-attr]


def _check_lengths(hypotheses: Sequence[str], streams: list[list[Optional[str]]]) -> None:
    for index, stream in enumerate(streams):
        if len(stream) != len(hypotheses):
            raise ValueError(
                f"reference stream {index + 1} has {len(stream)} sentences, "
                f"the hypotheses have {len(hypotheses)}"
            )


def _breakdown(metric: BLEU, stats: Sequence[int]) -> BleuBreakdown:
    # compute_bleu changes the count lists in place for add-k smoothing: give it copies
    score = metric._compute_score_from_stats(list(stats))
    order = metric.max_ngram_order
    return BleuBreakdown(
        score=float(score.score),
        counts=[int(c) for c in stats[2 : 2 + order]],
        totals=[int(t) for t in stats[2 + order : 2 + 2 * order]],
        precisions=[float(p) for p in score.precisions],
        bp=float(score.bp),
        sys_len=int(score.sys_len),
        ref_len=int(score.ref_len),
        signature=metric.get_signature().format(),
    )


def _sum_stats(rows: Sequence[Sequence[int]], width: int) -> list[int]:
    total = [0] * width
    for row in rows:
        for i, value in enumerate(row):
            total[i] += value
    return total


def corpus_bleu(
    hypotheses: Sequence[str],
    references: References,
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth: str = "exp",
    smooth_value: float | None = None,
    max_order: int = MAX_NGRAM_ORDER,
) -> BleuBreakdown:
    """sacreBLEU's corpus BLEU (`BLEU(...).corpus_score`) with its breakdown."""
    streams = _as_streams(references)
    _check_lengths(hypotheses, streams)
    metric = _metric(tokenize, lowercase, smooth, smooth_value, max_order)
    rows = metric._extract_corpus_statistics(list(hypotheses), streams) if hypotheses else []
    if not hypotheses:  # sacreBLEU needs the reference count for its signature
        metric.num_refs = len(streams)
    return _breakdown(metric, _sum_stats(rows, 2 + 2 * max_order))


def sentence_bleu(
    hypothesis: str,
    references: Union[str, Sequence[str]],
    tokenize: str = "13a",
    lowercase: bool = False,
    smooth: str = "exp",
    smooth_value: float | None = None,
    max_order: int = MAX_NGRAM_ORDER,
    effective_order: bool = True,
) -> BleuBreakdown:
    """sacreBLEU's sentence BLEU (`BLEU(..., effective_order=True).sentence_score`)."""
    refs = [references] if isinstance(references, str) else list(references)
    metric = _metric(tokenize, lowercase, smooth, smooth_value, max_order, effective_order)
    rows = metric._extract_corpus_statistics([hypothesis], [[ref] for ref in refs])
    return _breakdown(metric, rows[0])


def tokenize_sentence(text: str, tokenize: str = "13a", lowercase: bool = False) -> list[str]:
    """The tokens BLEU counts for `text`."""
    return _metric(tokenize, lowercase)._preprocess_segment(text).split()


def matched_ngrams(
    hypothesis: str,
    references: Union[str, Sequence[str]],
    max_order: int = MAX_NGRAM_ORDER,
    tokenize: str = "13a",
    lowercase: bool = False,
) -> list[tuple[int, int, tuple[str, ...]]]:
    """The hypothesis n-grams that BLEU counts as matches, as `(n, start_token_index, tokens)`.

    Clipping keeps the earliest occurrences: if "He" may match once, only the first "He" is listed.
    The number of entries of each n equals `sentence_bleu(...).counts[n - 1]`.
    """
    refs = [references] if isinstance(references, str) else [r for r in references if r is not None]
    metric = _metric(tokenize, lowercase)
    hyp_tokens = metric._preprocess_segment(hypothesis).split()
    ref_tokens = [metric._preprocess_segment(ref).split() for ref in refs]
    matched = []
    for n in range(1, max_order + 1):
        allowed: Counter = Counter()  # clip: the most any one reference holds
        for tokens in ref_tokens:
            counts = Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
            for gram, count in counts.items():
                allowed[gram] = max(allowed[gram], count)
        used: Counter = Counter()
        for start in range(len(hyp_tokens) - n + 1):
            gram = tuple(hyp_tokens[start : start + n])
            if used[gram] < allowed[gram]:
                used[gram] += 1
                matched.append((n, start, gram))
    return matched


def sentence_example(
    hypothesis: str,
    reference: str,
    max_order: int = MAX_NGRAM_ORDER,
    tokenize: str = "13a",
    lowercase: bool = False,
) -> SentenceExample:
    """A hypothesis and its reference as BLEU tokens, with the matched n-grams to highlight."""
    return SentenceExample(
        hyp_tokens=tokenize_sentence(hypothesis, tokenize, lowercase),
        ref_tokens=tokenize_sentence(reference, tokenize, lowercase),
        matched=matched_ngrams(hypothesis, reference, max_order, tokenize, lowercase),
    )


class IncrementalBleu:
    """Corpus BLEU over batches that arrive one by one (live BLEU while a model decodes).

    Only the sufficient statistics are kept (lengths, clipped counts and totals per n), so adding a
    batch costs that batch alone; `result()` equals `corpus_bleu` over everything added so far.
    """

    def __init__(
        self,
        tokenize: str = "13a",
        lowercase: bool = False,
        smooth: str = "exp",
        smooth_value: float | None = None,
        max_order: int = MAX_NGRAM_ORDER,
    ):
        self._metric = _metric(tokenize, lowercase, smooth, smooth_value, max_order)
        self._stats = [0] * (2 + 2 * max_order)  # sys_len, ref_len, counts..., totals...
        self._num_refs: set[int] = set()
        self.sentences = 0

    def add(self, hypotheses: Sequence[str], references: References) -> None:
        if not hypotheses:
            return
        streams = _as_streams(references)
        _check_lengths(hypotheses, streams)
        rows = self._metric._extract_corpus_statistics(list(hypotheses), streams)
        self._num_refs.add(self._metric.num_refs)
        self._stats = _sum_stats([self._stats, *rows], len(self._stats))
        self.sentences += len(hypotheses)

    def result(self) -> BleuBreakdown:
        refs = self._num_refs or {1}
        self._metric.num_refs = next(iter(refs)) if len(refs) == 1 else -1
        return _breakdown(self._metric, self._stats)

    def reset(self) -> None:
        self._stats = [0] * len(self._stats)
        self._num_refs.clear()
        self.sentences = 0
