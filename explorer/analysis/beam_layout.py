"""Where to draw a beam-search tree: x = decoding step, y = leaf order. Qt-free, vectorised.

Every leaf (a pruned candidate, a finished hypothesis, a hypothesis alive when decoding stopped) gets
its own row, as tall as its `leaf_height` (the panel gives pruned leaves a fraction of a row, so
the hypotheses the beam kept get the room for their labels); an inner node sits on the row of its
best child, so every hypothesis reads as one
horizontal line with the alternatives it beat branching off below it. Siblings are ordered best
first and a subtree's rows are contiguous, so edges never cross and the best branch is on top.

The work is a handful of numpy operations per decoding step (not per node), so a width-16,
length-50 tree of ~25k candidates lays out in a few milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TreeLayout:
    x: np.ndarray  # (N,) float: the node's decoding step
    y: np.ndarray  # (N,) float: leaf row; an inner node shares its best child's row
    edges: np.ndarray  # (E, 2) int: (parent index, child index), indices into the node arrays
    parent_index: np.ndarray  # (N,) int: index of the parent, -1 for roots
    leaf_count: np.ndarray  # (N,) int: leaves in the node's subtree (1 for a leaf)
    extent: np.ndarray  # (N,) float: height of the node's subtree, the sum of its leaves' heights
    rank: np.ndarray  # (N,) int: 0 = best-scoring node among the nodes of the same step

    @property
    def rows(self) -> float:
        """Height of the whole forest (the number of leaves when every leaf is one row tall)."""
        return float(self.extent[self.parent_index < 0].sum())


GHOST_CAPTION = "greedy, outside the beam:"  # left of the greedy tokens the beam dropped

def layout_tree(
    ids: np.ndarray, parents: np.ndarray, steps: np.ndarray, order_key: np.ndarray,
    leaf_height: np.ndarray | None = None,
) -> TreeLayout:
    """Lay out a forest given per-node `ids`, `parents` (-1 or an id not in `ids` = root), `steps`
    (a child's step is greater than its parent's), `order_key` (higher = drawn first) and
    `leaf_height` (rows a node takes if it is a leaf; default 1)."""
    ids = np.asarray(ids, dtype=np.int64)
    parents = np.asarray(parents, dtype=np.int64)
    steps = np.asarray(steps, dtype=np.int64)
    order_key = np.asarray(order_key, dtype=np.float64)
    n = len(ids)
    if n == 0:
        empty = np.zeros(0)
        return TreeLayout(empty, empty, np.zeros((0, 2), np.int64), empty.astype(np.int64),
                          empty.astype(np.int64), empty, empty.astype(np.int64))
    leaf_height = np.ones(n) if leaf_height is None else np.asarray(leaf_height, np.float64)

    # Map parent ids to indices; anything unknown is a root.
    sorter = np.argsort(ids, kind="stable")
    position = np.searchsorted(ids, parents, sorter=sorter).clip(0, n - 1)
    found = ids[sorter[position]] == parents
    parent_index = np.where(found, sorter[position], -1)

    # Bottom-up: leaves per subtree, one step (level) at a time, deepest first.
    child_count = np.bincount(parent_index[parent_index >= 0], minlength=n)
    leaf_count = (child_count == 0).astype(np.int64)
    extent = np.where(child_count == 0, leaf_height, 0.0)
    levels = np.unique(steps)
    members = {s: np.flatnonzero(steps == s) for s in levels}
    for s in levels[::-1]:
        nodes = members[s]
        nodes = nodes[parent_index[nodes] >= 0]
        np.add.at(leaf_count, parent_index[nodes], leaf_count[nodes])
        np.add.at(extent, parent_index[nodes], extent[nodes])

    # Top-down: each node's first row = its parent's first row + the rows of its better siblings.
    first_row = np.zeros(n, dtype=np.float64)
    for s in levels:
        nodes = members[s]
        group = parent_index[nodes]  # -1 groups all roots together
        order = np.lexsort((-order_key[nodes], group))
        nodes, group = nodes[order], group[order]
        before = np.cumsum(extent[nodes]) - extent[nodes]  # exclusive running total
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        group_start = np.repeat(starts, np.diff(np.r_[starts, len(nodes)]))
        offset_in_group = before - before[group_start]
        base = np.where(group >= 0, first_row[group.clip(0)], 0)
        first_row[nodes] = base + offset_in_group

    y = first_row  # the first row of a subtree is its best leaf's
    children = np.flatnonzero(parent_index >= 0)
    edges = np.stack([parent_index[children], children], axis=1)  # (E, 2)
    return TreeLayout(
        x=steps.astype(np.float64),
        y=y,
        edges=edges,
        parent_index=parent_index,
        leaf_count=leaf_count,
        extent=extent,
        rank=rank_within_step(steps, order_key),
    )


def rank_within_step(steps: np.ndarray, order_key: np.ndarray) -> np.ndarray:
    """0 for the node with the highest `order_key` among nodes of its step, 1 for the next, ..."""
    steps = np.asarray(steps)
    order = np.lexsort((-np.asarray(order_key, dtype=np.float64), steps))
    sorted_steps = steps[order]
    starts = np.flatnonzero(np.r_[True, sorted_steps[1:] != sorted_steps[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - group_start
    return rank


def edge_segments(layout: TreeLayout, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """x and y arrays for pyqtgraph's connect="pairs": parent, child, parent, child, ...
    `mask` (N,) bool keeps only edges whose child is selected."""
    edges = layout.edges
    if mask is not None:
        edges = edges[mask[edges[:, 1]]]
    flat = edges.reshape(-1)  # (2E,)
    return layout.x[flat], layout.y[flat]


def pick_labels(columns: np.ndarray, y_px: np.ndarray, priority: np.ndarray,
                min_gap: float) -> np.ndarray:
    """Indices of the labels to draw so that no two in the same column are closer than `min_gap`
    pixels: lower `priority` first, then top to bottom, each taken when it clears those taken."""
    columns, y_px = np.asarray(columns), np.asarray(y_px, dtype=np.float64)
    # A Python loop is fine: labels are only drawn when a step is >= 55 px wide, so at most a few
    # hundred nodes (2k per step) are in view.
    taken: dict[int, list[float]] = {}  # column -> sorted pixel heights taken
    picked = []
    for index in np.lexsort((y_px, priority)):
        heights = taken.setdefault(int(columns[index]), [])
        y = float(y_px[index])
        at = int(np.searchsorted(heights, y))
        if (at > 0 and y - heights[at - 1] < min_gap) or (
                at < len(heights) and heights[at] - y < min_gap):
            continue
        heights.insert(at, y)
        picked.append(index)
    return np.array(picked, dtype=np.int64)


def stack_nbest_numbers(ends, px_per_step: float, px_per_row: float, line_px: float):
    """Where the n-best numbers go: just below-right of each hypothesis' last node `(rank, x, y)`
    (finished nodes have no children, so the right is free), pushed down where two in one column
    would overlap. -> ([("#rank", x, y)], [(column, bottom pixel)] each number takes)."""
    placed, taken = [], []
    bottom_of: dict[float, float] = {}  # column -> lowest number's bottom so far, in pixels
    for rank, x, y in sorted(ends, key=lambda e: (e[1], e[2])):
        top_px = max(y * px_per_row, bottom_of.get(x, -np.inf))
        bottom_of[x] = top_px + line_px
        placed.append((f"#{rank}", x + 6 / px_per_step, top_px / px_per_row))
        taken.append((x, top_px + line_px))
    return placed, taken


def fitted_range(layout: TreeLayout, ghosts, view_height: float, line_px: float,
                 view_width: float = 0.0, right_px: float = 0.0, left_px: float = 0.0):
    """(x range, y range) showing the whole tree and the greedy ghosts `(x, y)` with one label
    line of margin in pixels above the top row and below the bottom one. Given the view's width,
    `right_px` more pixels right of the last step (its labels and the n-best numbers, which a
    long tree's narrow steps clipped) and `left_px` left of the first ghost (its caption)."""
    bottom = max(float(layout.y.max()), max((y for _, y in ghosts), default=0.0))
    last = max([float(layout.x.max())] + [x for x, _ in ghosts])
    left, right = -1.3, last + 1.0
    if view_width > right_px + left_px + 40:
        # steps per pixel of what is left once the margins are taken: pixels become steps
        steps_per_px = (right - left) / (view_width - right_px - left_px)
        right = max(right, last + right_px * steps_per_px)
        if ghosts:
            left = min(left, ghosts[0][0] - 0.2 - left_px * steps_per_px)
    height = max(view_height, 4 * line_px)
    margin = line_px + 6
    span = max(bottom, 1.0) / max(1 - 2 * margin / height, 0.2)
    pad = margin * span / height
    return (left, right), (-pad, bottom + pad)


def ghost_markers(ghosts, tokens: list[str], px_per_step: float, text_width):
    """Texts for the greedy path where it left the beam (`ghosts`: (position, row) each): a caption
    left of the first, and each token under its ghost when the widest fits in one step's pixels
    (`text_width(text)` measures one). -> [(text, x, y, anchor)]."""
    if not ghosts:
        return []
    row = ghosts[0][1]
    markers = [(GHOST_CAPTION, ghosts[0][0] - 0.2, row, (1, 0.5))]
    if max(text_width(tokens[p]) for p, _ in ghosts) + 8 <= px_per_step:
        markers += [(tokens[p], p, row, (0.5, -0.1)) for p, _ in ghosts]
    return markers
