"""Attention scores for RNN encoder-decoders: how well decoder state s matches encoder state h_i.

    dot          s^T h_i                                   (Luong et al., 2015)
    general      s^T W h_i                                 (Luong et al., 2015)
    scaled-dot   s^T h_i / sqrt(n), n = size of h_i        (Vaswani et al., 2017)
    additive     v^T tanh(W [s; h_i])                      (Bahdanau et al., 2015, "concat")
    cosine       beta * cos(s, h_i), beta learned, init 1  (Graves et al., 2014, content-based)
    location     alpha = softmax(W s)                      (Luong et al., 2015; ignores h entirely)

The weights are alpha = softmax over source positions, with padding masked to exactly 0, and the
context is sum_i alpha_i h_i.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

SCORES = ("dot", "general", "scaled-dot", "additive", "cosine", "location")


class Alignment(nn.Module):
    def __init__(
        self,
        score: str,
        query_size: int,
        key_size: int,
        attn_size: int | None = None,
        max_src_len: int = 128,
    ):
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"unknown attention score {score!r}; choose one of {', '.join(SCORES)}")
        if score in ("dot", "scaled-dot", "cosine") and query_size != key_size:
            raise ValueError(
                f"{score} attention needs query_size == key_size, got {query_size} and {key_size}"
            )
        self.score, self.query_size, self.key_size = score, query_size, key_size
        self.max_src_len = max_src_len
        if score == "general":
            self.W = nn.Linear(key_size, query_size, bias=False)  # W h_i, then s^T (W h_i)
        elif score == "additive":
            attn_size = attn_size or query_size
            self.W = nn.Linear(query_size + key_size, attn_size, bias=False)  # acts on [s; h_i]
            self.v = nn.Linear(attn_size, 1, bias=False)
        elif score == "cosine":
            self.beta = nn.Parameter(torch.ones(()))  # key strength: sharpens the flat cosine softmax
        elif score == "location":
            self.W = nn.Linear(query_size, max_src_len)  # one logit per source position

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
        context = weights @ keys  # (B, Tq, Hk)
        if single:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights

    def scores(self, queries: Tensor, keys: Tensor) -> Tensor:
        """Unnormalised scores (B, Tq, Tk) of queries (B, Tq, Hq) against keys (B, Tk, Hk)."""
        if self.score == "dot":
            return queries @ keys.transpose(1, 2)
        if self.score == "scaled-dot":
            return queries @ keys.transpose(1, 2) / math.sqrt(self.key_size)
        if self.score == "general":
            return queries @ self.W(keys).transpose(1, 2)
        if self.score == "cosine":
            unit_queries = F.normalize(queries, dim=-1, eps=1e-8)
            unit_keys = F.normalize(keys, dim=-1, eps=1e-8)
            return self.beta * (unit_queries @ unit_keys.transpose(1, 2))
        if self.score == "additive":
            # W [s; h] = W_s s + W_h h: project each side once instead of every (query, key) pair.
            w_query, w_key = self.W.weight.split([self.query_size, self.key_size], dim=1)
            # (B, Tq, 1, A) + (B, 1, Tk, A) -> (B, Tq, Tk, A)
            projected = F.linear(queries, w_query).unsqueeze(2) + F.linear(keys, w_key).unsqueeze(1)
            return self.v(torch.tanh(projected)).squeeze(-1)
        # location: the logits depend on the decoder state only; keep the first Tk positions.
        src_len = keys.shape[1]
        if src_len > self.max_src_len:
            raise ValueError(
                f"location attention scores at most {self.max_src_len} source positions, got {src_len}"
            )
        return self.W(queries)[..., :src_len]
