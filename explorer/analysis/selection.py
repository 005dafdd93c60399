"""LSTMVis's selection (Strobelt et al., 2017): units on over a span of text and off around it,
and everywhere else in the data where the same units switch on together.

`select_units(values, start, end, threshold)` takes a layer's units x time steps over the probe
text and a span [start, end): a unit is selected when it is above the threshold at every step of the
span and at or below it on the `margin` steps just before and after. `find_matches(stream, units,
threshold)` then scans a `StateStream` (many texts, end to end) for the maximal runs where every
selected unit is on, never crossing from one text into the next. Both are a few numpy passes: over
100k tokens a query answers in milliseconds (benchmarks/bench_selection.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class StateStream:
    """One layer's states over many texts laid end to end (validation data, say)."""

    name: str  # the trace's name: "lm.l0", "encoder.l0_reverse", "decoder.layer1"
    values: np.ndarray  # (units, N) float32: units x tokens, like the probe's heatmaps
    tokens: list[str]  # N token labels
    starts: np.ndarray  # (texts,) int64: where each text begins; starts[0] == 0

    @property
    def length(self) -> int:
        return self.values.shape[1]

    def text_bounds(self) -> np.ndarray:
        """(texts + 1,) boundaries: text i is [bounds[i], bounds[i + 1])."""
        return np.append(self.starts, self.length)


@dataclass
class UnitSelection:
    """Units on over the span and off around it, best separated first."""

    units: np.ndarray  # (k,) int64 unit indices
    scores: np.ndarray  # (k,) min over the span minus max around it (> 0 for every selected unit)
    start: int
    end: int
    threshold: float


@dataclass
class Matches:
    """Maximal runs of the stream where every selected unit is on, ranked: the runs closest in
    length to the selection first, then the strongest (highest mean activation)."""

    starts: np.ndarray  # (m,) int64 token index of each run's first token
    ends: np.ndarray  # (m,) int64 one past each run's last token
    mean: np.ndarray  # (m,) mean activation of the selected units over the run

    def __len__(self) -> int:
        return len(self.starts)


def select_units(values: np.ndarray, start: int, end: int, threshold: float, margin: int = 1) -> UnitSelection:
    """Units of `values` (units, T) above `threshold` on every step of [start, end) and at or below
    it on the `margin` steps on either side (clipped to the text)."""
    units_count, length = values.shape
    if not 0 <= start < end <= length:
        raise ValueError(f"the span [{start}, {end}) is not inside a text of {length} tokens")
    inside = values[:, start:end].min(axis=1)  # (units,)
    around = np.r_[max(0, start - margin):start, end:min(length, end + margin)]
    outside = values[:, around].max(axis=1) if len(around) else np.full(units_count, -np.inf)
    chosen = np.flatnonzero((inside > threshold) & (outside <= threshold))
    scores = inside[chosen] - np.minimum(outside[chosen], threshold)
    order = np.argsort(-scores, kind="stable")
    return UnitSelection(chosen[order].astype(np.int64), scores[order].astype(np.float32), start, end, threshold)


def find_matches(stream: StateStream, units: np.ndarray, threshold: float, query_length: int | None = None,
                 limit: int | None = 100) -> Matches:
    """Every maximal run of `stream` where all `units` are above `threshold`, split at text starts.
    Ranked by closeness to `query_length` (when given), then by mean activation; at most `limit`."""
    units = np.asarray(units, dtype=np.int64)
    if units.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Matches(empty, empty, np.zeros(0, dtype=np.float32))
    picked = stream.values[units]  # (k, N): k contiguous rows
    on = (picked > threshold).all(axis=0)  # (N,)
    text_start = np.zeros(stream.length, dtype=bool)
    text_start[stream.starts] = True
    previous_on = np.r_[False, on[:-1]] & ~text_start
    next_on = np.r_[on[1:] & ~text_start[1:], False]
    starts = np.flatnonzero(on & ~previous_on)
    ends = np.flatnonzero(on & ~next_on) + 1
    # mean activation per run from a cumulative sum: no Python loop over runs
    column_mean = picked.mean(axis=0, dtype=np.float64)
    cumulative = np.r_[0.0, np.cumsum(column_mean)]
    mean = (cumulative[ends] - cumulative[starts]) / (ends - starts)
    keys = (-mean,) if query_length is None else (-mean, np.abs((ends - starts) - query_length))
    order = np.lexsort(keys)[:limit]  # the last key sorts first
    return Matches(starts[order], ends[order], mean[order].astype(np.float32))


def match_context(stream: StateStream, start: int, end: int, width: int = 12) -> tuple[str, str, str]:
    """(before, match, after) token texts of one match, `width` tokens either side, within its text."""
    bounds = stream.text_bounds()
    text = int(np.searchsorted(bounds, start, side="right")) - 1
    left, right = max(int(bounds[text]), start - width), min(int(bounds[text + 1]), end + width)
    join = "".join if all(len(t) <= 1 for t in stream.tokens[left:right]) else " ".join
    return join(stream.tokens[left:start]), join(stream.tokens[start:end]), join(stream.tokens[end:right])
