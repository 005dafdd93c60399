"""A BeamResult as the arrays and tables a tree view needs: per-node arrays in node-id order, each
node's children, the n-best and greedy paths as node ids, and the CSV tables of an export. Qt-free.
"""

from __future__ import annotations

import numpy as np

from explorer.analysis.beam_layout import TreeLayout, layout_tree
from explorer.decoding.types import BeamResult, length_penalty

PRUNED_ROW = 0.4  # rows a pruned leaf takes: the kept hypotheses get the room for their labels


class BeamTreeIndex:
    def __init__(self, result: BeamResult) -> None:
        nodes = result.nodes
        self.ids = np.array([n.id for n in nodes], dtype=np.int64)
        self.parents = np.array([-1 if n.parent is None else n.parent for n in nodes], np.int64)
        self.steps = np.array([n.step for n in nodes], dtype=np.int64)
        self.scores = np.array([n.score for n in nodes], dtype=np.float64)
        self.status = np.array(["root" if n.parent is None else n.status for n in nodes])
        self.children: dict[int, list[int]] = {}
        self._child_by_token: dict[tuple[int, int], int] = {}  # (parent, token id) -> child
        for n in nodes:
            if n.parent is not None:
                self.children.setdefault(n.parent, []).append(n.id)
                self._child_by_token[(n.parent, n.token_id)] = n.id
        self.nbest_nodes = [self.follow(h.token_ids) for h in result.nbest]
        self.greedy_nodes = self.follow(result.greedy.token_ids) if result.greedy else []
        self.path_ids = np.array([0, *self.greedy_nodes, *(i for p in self.nbest_nodes for i in p)])

    def follow(self, token_ids: list[int]) -> list[int]:
        """Node ids along `token_ids` from the root, as far as the tree holds them."""
        path, node = [], 0
        for token in token_ids:
            node = self._child_by_token.get((node, token))
            if node is None:
                break
            path.append(node)
        return path


def visible_layout(tree: BeamTreeIndex, show_pruned: bool) -> tuple[np.ndarray, TreeLayout]:
    """The nodes drawn (the pruned ones too when `show_pruned`) as indices into the tree's
    arrays, in layout order, and their layout: a pruned leaf takes PRUNED_ROW rows."""
    index = np.flatnonzero(np.ones(len(tree.ids), bool) if show_pruned else tree.status != "pruned")
    status = tree.status[index]
    return index, layout_tree(tree.ids[index], tree.parents[index], tree.steps[index],
                                        tree.scores[index],
                                        leaf_height=np.where(status == "pruned", PRUNED_ROW, 1.0))


def drawn_tables(result: BeamResult, tree: BeamTreeIndex, ids: np.ndarray,
                 layout: TreeLayout) -> dict[str, tuple[list[str], list[list]]]:
    """`beam_tables` of the nodes `visible_layout` drew."""
    drawn = [int(i) for i in ids]
    return beam_tables(result, tree, dict(zip(drawn, layout.x)), dict(zip(drawn, layout.y)))


def beam_tables(result: BeamResult, tree: BeamTreeIndex, x: dict[int, float],
                y: dict[int, float]) -> dict[str, tuple[list[str], list[list]]]:
    """"nodes" (every candidate with its step counted from 1 as on the tree's axis, scores, status,
    n-best rank, greedy membership and drawn position `x`/`y` by node id, blank when not drawn)
    and "hypotheses" (n-best + greedy)."""
    on_greedy = set(tree.greedy_nodes)
    nbest_rank = {path[-1]: rank for rank, path in enumerate(tree.nbest_nodes, 1) if path}
    header = ["id", "parent", "step", "token_id", "token", "logprob", "score",
              "normalized_score", "rank", "status", "nbest", "on_greedy_path", "x", "y"]
    rows = []
    for n in result.nodes:
        normalized = n.score / length_penalty(n.step + 1, result.alpha) if n.parent is not None else 0.0
        # steps counted as the tree's axis counts them: the root (<bos>) 0, the first token 1
        rows.append([n.id, "" if n.parent is None else n.parent, n.step + 1, n.token_id, n.token,
                     n.logprob, n.score, normalized, n.rank, n.status, nbest_rank.get(n.id, ""),
                     n.id in on_greedy, x.get(n.id, ""), y.get(n.id, "")])
    hyp_header = ["name", "text", "score", "normalized_score", "finished", "tokens"]
    hyp_rows = [[f"beam #{i}", h.text, h.score, h.normalized_score, h.finished, " ".join(h.tokens)]
                for i, h in enumerate(result.nbest, 1)]
    if result.greedy is not None:
        g = result.greedy
        hyp_rows.append(["greedy", g.text, g.score, g.normalized_score, g.finished,
                         " ".join(g.tokens)])
    return {"nodes": (header, rows), "hypotheses": (hyp_header, hyp_rows)}
