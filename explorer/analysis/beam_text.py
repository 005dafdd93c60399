"""What the beam tree says about a node when hovered or clicked: plain text from a BeamResult. Qt-free."""

from __future__ import annotations

import math

from explorer.decoding.types import BeamResult, length_penalty


def describe_node(result: BeamResult, node_id: int, compact: bool = False) -> str:
    """The node's scores: one per line for a hover tip, two to a line (`compact`) for the detail
    pane, whose height goes to its charts."""
    node = result.nodes[node_id]
    if node.parent is None:
        return "start of the output (<bos> or the prompt)"
    length = node.step + 1
    normalized = node.score / length_penalty(length, result.alpha)
    prefix = " ".join(n.token for n in result.path(node_id))
    lines = [f"{node.token!r} at step {node.step} ({node.status})",
             f"rank at this step = {node.rank + 1}",
             f"token log p = {node.logprob:.3f}  (p = {math.exp(node.logprob):.3f})",
             f"cumulative log p = {node.score:.3f}",
             f"length-normalised = {normalized:.3f}  (α = {result.alpha:g}, |Y| = {length})",
             f"prefix: {prefix}"]
    if compact:
        lines = [f"{lines[0]}, {lines[1]}", f"{lines[2]}; {lines[3]}", *lines[4:]]
    return "\n".join(lines)


def describe_greedy_token(result: BeamResult, position: int) -> str:
    """A greedy token drawn outside the tree: beam search pruned the greedy prefix it ends."""
    greedy = result.greedy
    return (f"greedy token {greedy.tokens[position]!r} at step {position}\n"
            f"token log p = {greedy.token_logprobs[position]:.3f}\n"
            f"cumulative log p = {sum(greedy.token_logprobs[: position + 1]):.3f}\n"
            "beam search pruned this prefix")
