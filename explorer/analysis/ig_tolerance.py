"""Nested quadrature for integrated gradients run to a tolerance (attribution.py, `tolerance`).

Gauss-Legendre rules (the fixed-step mode, Captum's default) share no nodes between orders: a
refinement would evaluate every point again. Clenshaw-Curtis rules nest: the rule on 2N
intervals keeps the N + 1 nodes of the rule on N and adds the N midpoints in angle, so doubling
until the completeness gap is small costs exactly the points of the last rule (a 33-point rule
reached from 5: 33 forward and backward passes, where Gauss-Legendre doubling 4, 8, 16, 32 would
cost 60). For the smooth integrands of a network's path the two converge at about the same rate
(Trefethen, "Is Gauss quadrature better than Clenshaw-Curtis?", SIAM Review 2008).

    nodes, weights = clenshaw_curtis(8)     # 9 nodes in [0, 1] (both ends included), 9 weights
    new_nodes(8)                            # [1, 3, 5, 7]: the nodes the rule on 4 lacks
"""

from __future__ import annotations

import numpy as np

FIRST_LEVEL = 4  # intervals of the first rule: 5 points
MAX_STEPS = 129  # the default cap: the rule on 128 intervals


def clenshaw_curtis(intervals: int) -> tuple[np.ndarray, np.ndarray]:
    """The Clenshaw-Curtis rule on [0, 1] with `intervals` (even) intervals: nodes
    (1 - cos(pi j / N)) / 2 for j = 0..N and their weights (Waldvogel's closed form)."""
    n = intervals
    j = np.arange(n + 1)
    nodes = (1.0 - np.cos(np.pi * j / n)) / 2.0
    k = np.arange(1, n // 2 + 1)
    b = np.where(k == n // 2, 1.0, 2.0)
    # w_j = c_j / N * (1 - sum_k b_k cos(2 pi k j / N) / (4k^2 - 1)) on [-1, 1]; halved on [0, 1]
    terms = (b / (4.0 * k * k - 1.0))[None, :] * np.cos(2.0 * np.pi * np.outer(j, k) / n)  # (N+1, N/2)
    c = np.where((j == 0) | (j == n), 1.0, 2.0)
    weights = c / n * (1.0 - terms.sum(1)) / 2.0
    return nodes, weights


def new_nodes(intervals: int) -> list[int]:
    """Indices (into clenshaw_curtis(intervals)'s nodes) of the nodes the rule on half as many
    intervals does not have; all of them for the first rule."""
    if intervals == FIRST_LEVEL:
        return list(range(intervals + 1))
    return list(range(1, intervals, 2))


def levels(max_steps: int) -> list[int]:
    """The interval counts tried in turn: 4, 8, 16, ... while the rule's points fit max_steps."""
    out = [FIRST_LEVEL]
    while 2 * out[-1] + 1 <= max_steps:
        out.append(2 * out[-1])
    return out
