"""Plain-data results of decoding: numpy arrays, floats, ints and strings, never tensors.

They cross from a decoding worker thread to the UI and are written as JSON by `explorer decode`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

STATUSES = ("kept", "pruned", "finished")


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's length penalty lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al., 2016); alpha = 0 gives 1."""
    return ((5.0 + length) / 6.0) ** alpha


def _array_or_none(array: np.ndarray | None):
    return None if array is None else np.asarray(array).tolist()


@dataclass
class Hypothesis:
    """One output sequence. `token_ids` include the final <eos> when the search produced one."""

    tokens: list[str]
    token_ids: list[int]
    text: str  # the tokenizer's decoding of token_ids without <eos>
    score: float  # sum of token_logprobs (no length penalty)
    normalized_score: float  # score / length_penalty(len(token_ids), alpha)
    token_logprobs: list[float]
    finished: bool = True  # False when the search stopped at its maximum length without <eos>
    # the attention row that produced each token, (L, H, Tk) numpy, None for models without one
    attention: list[np.ndarray | None] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {
            "tokens": list(self.tokens),
            "token_ids": [int(i) for i in self.token_ids],
            "text": self.text,
            "score": float(self.score),
            "normalized_score": float(self.normalized_score),
            "token_logprobs": [float(p) for p in self.token_logprobs],
            "finished": bool(self.finished),
        }


@dataclass
class BeamNode:
    """One candidate that beam search ranked at one step.

    `status`: "kept" (extends a live hypothesis), "pruned" (ranked but cut off by the beam width),
    "finished" (left the beam into the finished list: it ended with <eos> or reached the maximum
    length). Node ids are indices into `BeamResult.nodes`; the root (the <bos> or prompt) has id 0,
    parent None, step -1.
    """

    id: int
    parent: int | None
    step: int  # output position, 0 for the first generated token
    token_id: int
    token: str
    logprob: float  # log p(token | parent's prefix, source)
    score: float  # cumulative: parent's score + logprob
    status: str
    attention: np.ndarray | None = field(default=None, repr=False)  # (L, H, Tk) that produced it
    rank: int = 0  # rank among the candidates of this step (0 = best)

    def to_dict(self, include_attention: bool = True) -> dict:
        data = {
            "id": self.id,
            "parent": self.parent,
            "step": self.step,
            "token_id": int(self.token_id),
            "token": self.token,
            "logprob": float(self.logprob),
            "score": float(self.score),
            "status": self.status,
            "rank": self.rank,
        }
        if include_attention:
            data["attention"] = _array_or_none(self.attention)
        return data


def node_path(nodes: list[BeamNode], node_id: int) -> list[BeamNode]:
    """The chain of `nodes` from the root (excluded) to `node_id`, following parents."""
    chain = []
    node = nodes[node_id]
    while node.parent is not None:
        chain.append(node)
        node = nodes[node.parent]
    return chain[::-1]


@dataclass
class BeamResult:
    """Everything beam search did for one source.

    `nodes` records, at every step, the top 2k candidates that beam search ranked over all
    (live hypothesis, token) pairs, whatever became of them.
    """

    nodes: list[BeamNode]
    nbest: list[Hypothesis]  # sorted by normalized_score, best first
    greedy: Hypothesis | None  # the greedy path on the same source, for comparison
    beam_size: int
    alpha: float
    max_len: int
    source_tokens: list[str] = field(default_factory=list)  # attention columns

    @property
    def best(self) -> Hypothesis:
        return self.nbest[0]

    def children(self, node_id: int) -> list[BeamNode]:
        return [node for node in self.nodes if node.parent == node_id]

    def path(self, node_id: int) -> list[BeamNode]:
        """Root-to-node chain of nodes, root excluded."""
        return node_path(self.nodes, node_id)

    def to_dict(self, include_attention: bool = True) -> dict:
        return {
            "beam_size": self.beam_size,
            "alpha": self.alpha,
            "max_len": self.max_len,
            "source_tokens": list(self.source_tokens),
            "hypotheses": [h.to_dict() for h in self.nbest],
            "greedy": None if self.greedy is None else self.greedy.to_dict(),
            "tree": {"nodes": [n.to_dict(include_attention) for n in self.nodes]},
        }


@dataclass
class SampleStep:
    """The truncated, renormalised distribution one sampled token was drawn from."""

    token_ids: np.ndarray  # (S,) the support after top-k / top-p, most probable first
    probs: np.ndarray  # (S,) sums to 1
    chosen: int  # the sampled token id


@dataclass
class SampleResult:
    hypothesis: Hypothesis  # token_logprobs are the model's own (temperature 1, untruncated)
    steps: list[SampleStep]


@dataclass
class ScoreResult:
    """Teacher-forced log-probability of each target token, <eos> included."""

    tokens: list[str]
    logprobs: list[float]
    total: float

    def to_dict(self) -> dict:
        return {
            "tokens": list(self.tokens),
            "logprobs": [float(p) for p in self.logprobs],
            "total": float(self.total),
        }


@dataclass
class NextTokens:
    """The most probable next tokens of one hypothesis, for the step-by-step view."""

    token_ids: list[int]
    tokens: list[str]
    probs: np.ndarray  # (K,) model probabilities (temperature 1), most probable first
