"""The pieces every Transformer family is built from: embeddings with positions, encoder and decoder blocks.

Sub-module names follow torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (self_attn,
multihead_attn, linear1, linear2, norm1..3), so their state dicts load into these blocks and back.
"""

from __future__ import annotations

import math
from typing import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from seqmodels.attention import MultiHeadAttention
from seqmodels.config import TransformerConfig
from seqmodels.positional import LearnedPositional, RotaryEmbedding, SinusoidalPositional


class Embedding(nn.Module):
    """Token embedding times sqrt(d_model) (Vaswani 3.4) plus the positional encoding, then dropout.

    With RoPE nothing is added here: positions enter through the rotated queries and keys.
    """

    def __init__(self, vocab_size: int, config: TransformerConfig):
        super().__init__()
        self.token = nn.Embedding(vocab_size, config.d_model)
        # std d^-1/2 makes the scaled embedding unit-variance and keeps tied output logits small
        nn.init.normal_(self.token.weight, std=config.d_model**-0.5)
        self.scale = math.sqrt(config.d_model)
        if config.positional == "sinusoidal":
            self.position = SinusoidalPositional(config.max_len, config.d_model)
        elif config.positional == "learned":
            self.position = LearnedPositional(config.max_len, config.d_model)
        else:
            self.position = None
        self.max_len = config.max_len
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, tokens: Tensor, offset: int = 0) -> Tensor:
        """tokens (B, T), the first at position `offset` -> (B, T, D)."""
        length = tokens.size(1)
        if offset + length > self.max_len:
            raise ValueError(
                f"a sequence of {offset + length} tokens is longer than max_len={self.max_len}"
            )
        x = self.token(tokens) * self.scale  # (B, T, D)
        if self.position is not None:
            x = x + self.position(length, offset)  # (T, D) broadcast over the batch
        return self.dropout(x)


def make_rope(config: TransformerConfig) -> RotaryEmbedding | None:
    """One rotary table shared by every attention layer (it has no parameters)."""
    if config.positional != "rope":
        return None
    return RotaryEmbedding(config.d_model // config.num_heads, config.max_len)


class _FeedForwardLayer(nn.Module):
    """What encoder and decoder layers share: the position-wise feed-forward net (nanoGPT's MLP),
    linear2(dropout(activation(linear1(x)))), with torch's flat names so state dicts stay compatible."""

    def _add_feed_forward(self, config: TransformerConfig, activation: Callable[[Tensor], Tensor]):
        self.linear1 = nn.Linear(config.d_model, config.d_ff)
        self.linear2 = nn.Linear(config.d_ff, config.d_model)
        self.activation = activation
        self.dropout = nn.Dropout(config.dropout)  # inside the feed-forward net

    def feed_forward(self, x: Tensor) -> Tensor:
        """(B, T, D) -> (B, T, D)."""
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class EncoderLayer(_FeedForwardLayer):
    """Self-attention then a position-wise feed-forward net, each in a residual connection.

    Post-norm (Vaswani): x = LN(x + f(x)). Pre-norm (norm_first): x = x + f(LN(x)).
    A GPT block is this layer with a causal mask.
    """

    def __init__(self, config: TransformerConfig, activation: Callable[[Tensor], Tensor] = F.relu):
        super().__init__()
        d_model = config.d_model
        self.norm_first = config.norm_first
        self.self_attn = MultiHeadAttention(d_model, config.num_heads, dropout=config.dropout)
        self._add_feed_forward(config, activation)  # after the attention: the same parameter order
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(config.dropout)  # on the attention output
        self.dropout2 = nn.Dropout(config.dropout)  # on the feed-forward output

    def forward(
        self,
        x: Tensor,
        pad_mask: Tensor | None = None,
        is_causal: bool = False,
        rope: RotaryEmbedding | None = None,
        need_weights: bool = False,
        cache: dict[str, Tensor] | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """x (B, T, D) -> (x (B, T, D), self-attention weights (B, H, T, Tk) or None)."""
        attend = dict(
            pad_mask=pad_mask, is_causal=is_causal, rope=rope, need_weights=need_weights, cache=cache
        )
        if self.norm_first:
            attended, weights = self._self_attention(self.norm1(x), **attend)
            x = x + attended
            x = x + self.dropout2(self.feed_forward(self.norm2(x)))
        else:
            attended, weights = self._self_attention(x, **attend)
            x = self.norm1(x + attended)
            x = self.norm2(x + self.dropout2(self.feed_forward(x)))
        return x, weights

    def _self_attention(self, x, pad_mask, is_causal, rope, need_weights, cache):
        attended, weights = self.self_attn(
            x, x, x, key_padding_mask=pad_mask, need_weights=need_weights,
            is_causal=is_causal, rope=rope, cache=cache,
        )
        return self.dropout1(attended), weights


class DecoderLayer(_FeedForwardLayer):
    """Masked self-attention, cross-attention over the encoder's output, feed-forward; each residual."""

    def __init__(self, config: TransformerConfig, activation: Callable[[Tensor], Tensor] = F.relu):
        super().__init__()
        d_model = config.d_model
        self.norm_first = config.norm_first
        self.self_attn = MultiHeadAttention(d_model, config.num_heads, dropout=config.dropout)
        self.multihead_attn = MultiHeadAttention(d_model, config.num_heads, dropout=config.dropout)
        self._add_feed_forward(config, activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(config.dropout)
        self.dropout2 = nn.Dropout(config.dropout)
        self.dropout3 = nn.Dropout(config.dropout)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        tgt_pad_mask: Tensor | None = None,
        memory_pad_mask: Tensor | None = None,
        rope: RotaryEmbedding | None = None,
        need_weights: bool = False,
        self_cache: dict[str, Tensor] | None = None,
        cross_cache: dict[str, Tensor] | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """x (B, T, D), memory (B, Ts, D) or None when cross_cache holds its keys and values.

        Returns x (B, T, D) and the self- and cross-attention weights (B, H, T, T|Ts) or None.
        """
        attend_self = dict(pad_mask=tgt_pad_mask, rope=rope, need_weights=need_weights, cache=self_cache)
        attend_memory = dict(pad_mask=memory_pad_mask, need_weights=need_weights, cache=cross_cache)
        if self.norm_first:
            attended, self_weights = self._self_attention(self.norm1(x), **attend_self)
            x = x + attended
            attended, cross_weights = self._cross_attention(self.norm2(x), memory, **attend_memory)
            x = x + attended
            x = x + self.dropout3(self.feed_forward(self.norm3(x)))
        else:
            attended, self_weights = self._self_attention(x, **attend_self)
            x = self.norm1(x + attended)
            attended, cross_weights = self._cross_attention(x, memory, **attend_memory)
            x = self.norm2(x + attended)
            x = self.norm3(x + self.dropout3(self.feed_forward(x)))
        return x, self_weights, cross_weights

    def _self_attention(self, x, pad_mask, rope, need_weights, cache):
        attended, weights = self.self_attn(
            x, x, x, key_padding_mask=pad_mask, need_weights=need_weights,
            is_causal=True, rope=rope, cache=cache,
        )
        return self.dropout1(attended), weights

    def _cross_attention(self, x, memory, pad_mask, need_weights, cache):
        attended, weights = self.multihead_attn(
            x, memory, memory, key_padding_mask=pad_mask, need_weights=need_weights, cache=cache
        )
        return self.dropout2(attended), weights


def final_norm(config: TransformerConfig) -> nn.Module:
    """Pre-norm stacks end un-normalised (blocks only add to the residual): one last LayerNorm."""
    return nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()
