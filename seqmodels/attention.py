"""Multi-head scaled dot-product attention, softmax(QK^T / sqrt(d)) V, with a KV cache and RoPE.

Parameters are named as in `torch.nn.MultiheadAttention` (in_proj_weight, in_proj_bias, out_proj),
so state dicts load both ways and the two modules give the same results.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqmodels.positional import RotaryEmbedding


def _additive(mask: Tensor, dtype: torch.dtype) -> Tensor:
    """torch's convention: a boolean True means "do not attend"; a float mask is added to the scores."""
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)
    return mask.to(dtype)


def causal_mask(query_len: int, key_len: int, device=None) -> Tensor:
    """(Tq, Tk) boolean, True above the diagonal: query i (at position key_len - query_len + i) may not
    see later keys. With a cache the queries are the last query_len positions."""
    offset = key_len - query_len
    return torch.ones(query_len, key_len, dtype=torch.bool, device=device).triu(1 + offset)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 3.2.2), batch first by default.

    forward(query, key, value, key_padding_mask=None, attn_mask=None, need_weights=False,
            is_causal=False, rope=None, cache=None) -> (output (B, Tq, E), weights (B, H, Tq, Tk) or None)

    * key_padding_mask (B, Tk) and attn_mask (Tq, Tk) or (B*H, Tq, Tk) follow torch: boolean True is
      masked, a float mask is added to the scores. is_causal adds the causal mask itself.
    * need_weights=True computes the attention written out and returns the weights of every head
      (before attention dropout, so rows sum to 1). Otherwise the fused
      F.scaled_dot_product_attention is used and no weights are materialised.
    * rope: a RotaryEmbedding applied to the queries and keys of self-attention. Positions start at
      0, or after the keys already in the cache.
    * cache: a dict for incremental decoding, updated in place.
        - Self-attention: pass the new tokens as query/key/value; their keys and values (B, H, T, D)
          are appended to cache["k"], cache["v"] (created if absent) and attention runs over all of them.
        - A fixed memory (cross-attention): fill the cache once with `project_kv(memory)` and pass
          key=value=None; the cached keys and values are used as they are.
    * activation_hook: None, or fn(kind, value) -> value called with the weights ("pattern",
      (B, H, Tq, Tk)) and every head's output ("z", (B, Tq, H, D)); what it returns is used instead
      (explorer.analysis.activations sets it for one pass). While set, attention is written out.
    """

    activation_hook = None  # idle: one attribute check per call

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, batch_first: bool = True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by {num_heads} heads")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        # query, key and value projections stacked: rows [0:E] give Q, [E:2E] K, [2E:3E] V
        self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def _split_heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, D)

    def _project(self, x: Tensor, which: int) -> Tensor:
        """which = 0, 1, 2: the query, key or value projection of x (B, T, E), split into heads."""
        rows = slice(which * self.embed_dim, (which + 1) * self.embed_dim)
        return self._split_heads(F.linear(x, self.in_proj_weight[rows], self.in_proj_bias[rows]))

    def project_kv(self, memory: Tensor) -> dict[str, Tensor]:
        """Keys and values of a fixed memory (B, Tk, E) as a cross-attention cache {"k", "v"} (B, H, Tk, D)."""
        if not self.batch_first:
            memory = memory.transpose(0, 1)
        return {"k": self._project(memory, 1), "v": self._project(memory, 2)}

    def forward(
        self,
        query: Tensor,
        key: Tensor | None,
        value: Tensor | None,
        key_padding_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        need_weights: bool = False,
        is_causal: bool = False,
        rope: RotaryEmbedding | None = None,
        cache: dict[str, Tensor] | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        if not self.batch_first:
            query = query.transpose(0, 1)
            key = None if key is None else key.transpose(0, 1)
            value = None if value is None else value.transpose(0, 1)
        batch, query_len, _ = query.shape

        if key is None:  # keys and values of a fixed memory, from the cache
            if cache is None or "k" not in cache:
                raise ValueError("key=None needs a cache filled by project_kv")
            q = self._project(query, 0)  # (B, H, Tq, D)
            k, v = cache["k"], cache["v"]  # (B, H, Tk, D)
        else:
            if query is key and key is value:  # self-attention: one matmul for Q, K and V
                qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias)  # (B, T, 3E)
                q, k, v = (self._split_heads(part) for part in qkv.chunk(3, dim=-1))
            else:
                q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
            past = cache["k"].size(2) if cache is not None and "k" in cache else 0
            if rope is not None:
                q, k = rope(q, offset=past), rope(k, offset=past)
            if cache is not None:
                if past:
                    k = torch.cat([cache["k"], k], dim=2)  # (B, H, past + T, D)
                    v = torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
        key_len = k.size(2)

        mask = self._merge_masks(key_padding_mask, attn_mask, batch, query_len, key_len, q)
        # SDPA's own causal flag is fastest, but it aligns the mask top-left, so only when Tq == Tk
        fused_causal = (is_causal and mask is None and query_len == key_len and not need_weights
                        and self.activation_hook is None)
        if is_causal and not fused_causal and query_len > 1:
            causal = _additive(causal_mask(query_len, key_len, q.device), q.dtype)  # (Tq, Tk)
            mask = causal if mask is None else mask + causal
        if mask is not None:
            # a row masked everywhere (left padding under a causal mask) would softmax to NaN;
            # the lowest finite value instead of -inf makes it uniform, and exp() still gives 0
            mask = mask.clamp(min=torch.finfo(q.dtype).min)
        dropout = self.dropout if self.training else 0.0

        hook = self.activation_hook
        weights = None
        if need_weights or hook is not None:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, Tq, Tk)
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(dim=-1)
            if hook is not None:
                weights = hook("pattern", weights)
            out = F.dropout(weights, dropout, self.training) @ v  # (B, H, Tq, D)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=fused_causal
            )  # (B, H, Tq, D)
        out = out.transpose(1, 2)  # (B, Tq, H, D)
        if hook is not None:
            out = hook("z", out)
        out = out.reshape(batch, query_len, self.embed_dim)  # (B, Tq, E)
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.transpose(0, 1)
        return out, (weights if need_weights else None)

    def _merge_masks(self, key_padding_mask, attn_mask, batch, query_len, key_len, q):
        """One additive float mask broadcastable to (B, H, Tq, Tk), or None."""
        mask = None
        if key_padding_mask is not None:
            mask = _additive(key_padding_mask, q.dtype).view(batch, 1, 1, key_len)  # (B, 1, 1, Tk)
        if attn_mask is not None:
            extra = _additive(attn_mask, q.dtype)
            if extra.dim() == 3:
                extra = extra.view(batch, self.num_heads, query_len, key_len)  # (B, H, Tq, Tk)
            mask = extra if mask is None else mask + extra
        return mask

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"
