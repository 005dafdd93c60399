"""Attention for RNN encoder-decoders: how well decoder state s matches encoder state h_i.

The scores (dot, general, scaled-dot, additive, cosine, location), their formulas and the
parameters each learns are the table in `seqmodels.scores`. Whatever the score, the weights are
alpha = softmax over source positions, with padding masked to exactly 0, and the context is
sum_i alpha_i h_i.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from seqmodels.scores import SCORES


class Alignment(nn.Module):
    # None, or fn("pattern", weights (B, Tq, Tk)) -> weights used instead (explorer.analysis.activations)
    activation_hook = None

    def __init__(
        self,
        score: str,
        query_size: int,
        key_size: int,
        attn_size: int | None = None,
        max_src_len: int = 128,
    ):
        super().__init__()
        entry = SCORES.get(score)
        if entry is None or entry.function is None:
            choices = ", ".join(name for name, s in SCORES.items() if s.function is not None)
            raise ValueError(f"unknown attention score {score!r}; choose one of {choices}")
        if entry.same_size and query_size != key_size:
            raise ValueError(
                f"{score} attention needs query_size == key_size, got {query_size} and {key_size}"
            )
        self.score, self.query_size, self.key_size = score, query_size, key_size
        self.max_src_len = max_src_len
        self._score = entry.function
        for name, parameter in entry.parameters(query_size, key_size, attn_size or query_size,
                                                max_src_len).items():
            setattr(self, name, parameter)  # registered under the table's names (state-dict keys)

    def extra_repr(self) -> str:
        return f"{self.score}, query_size={self.query_size}, key_size={self.key_size}"

    def forward(self, query: Tensor, keys: Tensor, key_pad_mask: Tensor | None = None):
        """query (B, Hq) or (B, Tq, Hq), keys (B, Tk, Hk), key_pad_mask (B, Tk) True = padding.
        -> context (B, Hk) and weights (B, Tk); or (B, Tq, Hk) and (B, Tq, Tk) for a query sequence."""
        single = query.dim() == 2
        queries = query.unsqueeze(1) if single else query  # (B, Tq, Hq)
        scores = self.scores(queries, keys)  # (B, Tq, Tk)
        if key_pad_mask is not None:
            pad = key_pad_mask.unsqueeze(1)  # (B, 1, Tk)
            scores = scores.masked_fill(pad, float("-inf"))
            # A row with every key masked would be NaN; it has nothing to attend to, so all zeros.
            weights = torch.softmax(scores, dim=-1).masked_fill(pad, 0.0)
        else:
            weights = torch.softmax(scores, dim=-1)
        if self.activation_hook is not None:
            weights = self.activation_hook("pattern", weights)
        context = weights @ keys  # (B, Tq, Hk)
        if single:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights

    def scores(self, queries: Tensor, keys: Tensor) -> Tensor:
        """Unnormalised scores (B, Tq, Tk) of queries (B, Tq, Hq) against keys (B, Tk, Hk)."""
        return self._score(self, queries, keys)
