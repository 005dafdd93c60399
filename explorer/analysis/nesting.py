"""The lecture's quote/bracket cell, found on the user's own model: units whose h_t follows the
nesting depth of brackets and quotes (the built-in `brackets` task).

`nesting_depth(tokens)` is the depth after reading each token: `(`, `[`, `{` open, their partners
close, and `"` opens or closes a quote (quotes do not nest inside quotes, as in the task's texts).
`depth_units(streams)` correlates every unit of every layer with that depth over many texts
(Pearson's r) and ranks them by |r|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.analysis.labels import unit_label
from explorer.analysis.selection import StateStream
from explorer.data.tasks.symbols import BRACKETS

CLOSERS = {closer: opener for opener, closer in BRACKETS.items() if opener != closer}
QUOTE = '"'


def nesting_depth(tokens: list[str]) -> np.ndarray:
    """(T,) int: how many brackets and quotes are open after each token (every character of a
    multi-character token counts). Stray closers are ignored."""
    depth = np.zeros(len(tokens), dtype=np.int64)
    stack: list[str] = []
    for t, token in enumerate(tokens):
        for char in token:
            if char == QUOTE:
                if stack and stack[-1] == QUOTE:
                    stack.pop()
                else:
                    stack.append(QUOTE)
            elif char in BRACKETS:
                stack.append(char)
            elif char in CLOSERS and stack and stack[-1] == CLOSERS[char]:
                stack.pop()
        depth[t] = len(stack)
    return depth


def stream_depth(stream: StateStream) -> np.ndarray:
    """`nesting_depth` of every text in the stream, each starting at depth 0. (N,) int."""
    bounds = stream.text_bounds()
    parts = [nesting_depth(stream.tokens[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def depth_correlation(values: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Pearson's r of each unit's values (units, N) with depth (N,); 0 where either is constant."""
    x = values.astype(np.float64) - values.mean(axis=1, keepdims=True, dtype=np.float64)
    d = depth.astype(np.float64) - depth.mean()
    denominator = np.sqrt((x * x).sum(axis=1) * (d * d).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (x @ d) / denominator
    return np.where(denominator > 0, r, 0.0)


@dataclass
class DepthUnit:
    name: str  # the layer's trace name, e.g. "lm.l0"
    unit: int
    correlation: float  # Pearson's r with the nesting depth

    @property
    def label(self) -> str:
        """`l1:5`, the hidden-state table's row label."""
        return unit_label(self.name, self.unit)


def depth_units(streams: dict[str, StateStream], top: int = 10) -> list[DepthUnit]:
    """The `top` units of all layers whose states correlate most (in |r|) with nesting depth.
    Returns [] when the texts never nest (depth constant)."""
    found: list[DepthUnit] = []
    for name, stream in streams.items():
        depth = stream_depth(stream)
        if depth.size == 0 or depth.min() == depth.max():
            return []
        r = depth_correlation(stream.values, depth)
        best = np.argsort(-np.abs(r), kind="stable")[:top]
        found += [DepthUnit(name, int(u), float(r[u])) for u in best]
    found.sort(key=lambda d: -abs(d.correlation))
    return found[:top]
