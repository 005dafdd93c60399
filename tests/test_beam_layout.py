"""The beam tree layout against a plain recursive depth-first reference, on random trees."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.analysis.beam_layout import edge_segments, layout_tree, rank_within_step


def reference_rows(ids, parents, steps, key):
    """Recursive DFS, best sibling first: leaves get rows 0, 1, 2, ...; inner nodes their best
    child's row."""
    children = {i: [] for i in ids}
    roots = []
    for i, p in zip(ids, parents):
        (children[p] if p in children else roots).append(i)
    key_of = dict(zip(ids, key))
    y = {}
    next_row = [0]

    def visit(node):
        kids = sorted(children[node], key=lambda c: -key_of[c])
        if not kids:
            row = float(next_row[0])
            next_row[0] += 1
            y[node] = row
            return row, row
        spans = [visit(c) for c in kids]
        y[node] = spans[0][0]
        return spans[0][0], spans[-1][1]

    for r in sorted(roots, key=lambda c: -key_of[c]):
        visit(r)
    return np.array([y[i] for i in ids])


@st.composite
def random_trees(draw):
    n = draw(st.integers(1, 60))
    parents, steps = [-1], [0]
    for i in range(1, n):
        p = draw(st.integers(-1, i - 1))
        parents.append(p)
        steps.append(0 if p < 0 else steps[p] + 1)
    key = draw(st.lists(st.floats(-20, 0, allow_nan=False), min_size=n, max_size=n, unique=True))
    # Ids need not be positions: shuffle the node order and offset the ids.
    perm = draw(st.permutations(range(n)))
    ids = [100 + i for i in range(n)]
    parent_ids = [-1 if p < 0 else 100 + p for p in parents]
    return ([ids[k] for k in perm], [parent_ids[k] for k in perm],
            [steps[k] for k in perm], [key[k] for k in perm])


@settings(max_examples=60, deadline=None)
@given(random_trees())
def test_layout_matches_recursive_reference(tree):
    ids, parents, steps, key = tree
    layout = layout_tree(np.array(ids), np.array(parents), np.array(steps), np.array(key))
    np.testing.assert_allclose(layout.y, reference_rows(ids, parents, steps, key))
    np.testing.assert_array_equal(layout.x, steps)
    # Every non-root node has exactly one edge, from its parent.
    index = {i: k for k, i in enumerate(ids)}
    expected = sorted((index[p], index[i]) for i, p in zip(ids, parents) if p in index)
    assert sorted(map(tuple, layout.edges.tolist())) == expected
    # Leaves (nodes without children) occupy distinct rows 0 .. rows-1.
    leaves = np.bincount(layout.edges[:, 0], minlength=len(ids)) == 0
    np.testing.assert_array_equal(np.sort(layout.y[leaves]), np.arange(layout.rows))


def test_small_beam_tree_rows_and_ranks():
    # root(<bos>) -> A(-0.5), B(-1.0); A -> C(-0.7), D(-2.0); B -> E(-1.2)
    ids = np.array([0, 1, 2, 3, 4, 5])
    parents = np.array([-1, 0, 0, 1, 1, 2])
    steps = np.array([0, 1, 1, 2, 2, 2])
    score = np.array([0.0, -0.5, -1.0, -0.7, -2.0, -1.2])
    layout = layout_tree(ids, parents, steps, score)
    # Leaves C, D, E take rows 0, 1, 2; A sits on C's row, B on E's, the root on A's.
    np.testing.assert_allclose(layout.y, [0.0, 0.0, 2.0, 0.0, 1.0, 2.0])
    np.testing.assert_array_equal(layout.rank, [0, 0, 1, 0, 2, 1])
    x, y = edge_segments(layout)
    assert len(x) == 2 * 5
    # Pairs: parent then child.
    np.testing.assert_array_equal(x[0::2] + 1, x[1::2])
    mask = np.array([True, True, False, True, True, False])
    x, y = edge_segments(layout, mask)
    assert len(x) == 2 * 3


def test_rank_within_step_is_descending_order():
    steps = np.array([1, 1, 1, 2, 2])
    key = np.array([-3.0, -1.0, -2.0, -0.1, -5.0])
    np.testing.assert_array_equal(rank_within_step(steps, key), [2, 0, 1, 0, 1])


def test_empty_tree():
    layout = layout_tree(np.array([]), np.array([]), np.array([]), np.array([]))
    assert layout.edges.shape == (0, 2) and layout.rows == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 300), st.integers(0, 2)), max_size=80))
def test_picked_labels_never_overlap_and_leave_no_free_room(labels):
    from explorer.analysis.beam_layout import pick_labels

    columns = np.array([c for c, _, _ in labels], dtype=np.int64)
    y = np.array([h for _, h, _ in labels])
    priority = np.array([p for _, _, p in labels])
    picked = pick_labels(columns, y, priority, 15.0)
    assert len(set(picked.tolist())) == len(picked)
    for a in picked:
        for b in picked:
            if a != b and columns[a] == columns[b]:
                assert abs(y[a] - y[b]) >= 15.0
    # Brute force: every label left out clashes with a picked one in its column.
    for k in set(range(len(labels))) - set(picked.tolist()):
        assert any(columns[p] == columns[k] and abs(y[p] - y[k]) < 15.0 for p in picked)


@settings(max_examples=40, deadline=None)
@given(random_trees(), st.lists(st.sampled_from([0.4, 1.0]), min_size=60, max_size=60))
def test_leaf_heights_stack_leaves_in_the_same_order(tree, heights):
    """With per-leaf heights, every leaf starts where the leaves above it end."""
    ids, parents, steps, key = tree
    height = np.array(heights[: len(ids)])
    layout = layout_tree(np.array(ids), np.array(parents), np.array(steps), np.array(key),
                         leaf_height=height)
    plain = layout_tree(np.array(ids), np.array(parents), np.array(steps), np.array(key))
    leaves = np.flatnonzero(np.bincount(plain.edges[:, 0], minlength=len(ids)) == 0)
    order = leaves[np.argsort(plain.y[leaves])]  # leaves top to bottom
    expected = np.cumsum(height[order]) - height[order]
    np.testing.assert_allclose(layout.y[order], expected)
    assert layout.rows == pytest.approx(height[leaves].sum())
