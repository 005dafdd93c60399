"""What the beam tree says about a node when hovered or clicked: plain text from a BeamResult. Qt-free."""

from __future__ import annotations

import math

from explorer.decoding.types import BeamResult, length_penalty


def log_p(value: float) -> str:
    """A log-probability to 3 decimals, or, where that would keep one digit or none ("-0.000":
    a token the model is all but sure of), to 2 significant digits: "-4.2e-06"; 0 is "0"."""
    if value == 0:
        return "0"
    return f"{value:.3f}" if abs(value) >= 0.005 else f"{value:.2g}"


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
             f"token log p = {log_p(node.logprob)}  (p = {math.exp(node.logprob):.3f})",
             f"cumulative log p = {log_p(node.score)}",
             f"length-normalised = {normalized:.3f}  (α = {result.alpha:g}, |Y| = {length})",
             f"prefix: {prefix}"]
    if compact:
        lines = [f"{lines[0]}, {lines[1]}", f"{lines[2]}; {lines[3]}", *lines[4:]]
    return "\n".join(lines)


def describe_greedy_token(result: BeamResult, position: int) -> str:
    """A greedy token drawn outside the tree: beam search pruned the greedy prefix it ends."""
    greedy = result.greedy
    return (f"greedy token {greedy.tokens[position]!r} at step {position}\n"
            f"token log p = {log_p(greedy.token_logprobs[position])}\n"
            f"cumulative log p = {log_p(sum(greedy.token_logprobs[: position + 1]))}\n"
            "beam search pruned this prefix")


SCORE_TOLERANCE = 1e-4  # batched float32 steps make equal paths differ by ~1e-6 in log p


def summarize_result(result: BeamResult) -> str:
    """One paragraph under the tree: its size and settings, the best and the greedy output, and
    whether beam search found a more probable output than greedy."""
    best = result.nbest[0] if result.nbest else None
    greedy = result.greedy
    text = f"{len(result.nodes) - 1} candidates ranked, width {result.beam_size}, α {result.alpha:g}."
    if best is not None:
        text += f" Best: “{best.text}” (log p = {log_p(best.score)})."
    if greedy is not None:
        text += f" Greedy: “{greedy.text}” (log p = {log_p(greedy.score)})."
        if best is not None and best.score > greedy.score + SCORE_TOLERANCE:
            text += " Beam found a more probable output than greedy."
    return text
