"""Positional encodings: sinusoidal (Vaswani et al.), learned, and rotary (RoPE, Su et al.).

Sinusoidal and learned encodings are added to the token embeddings; RoPE instead rotates the
queries and keys inside attention, so that q·k depends only on the relative offset of the two tokens.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def _shapes_only() -> bool:
    """Built on the meta device, for its shapes: a table has no values to compute, and torch's
    meta `arange` would import torch._dynamo (2.5 s) to compute none."""
    return torch.get_default_device().type == "meta"


def sinusoidal(n_positions: int, d_model: int, base: float = 10000.0) -> Tensor:
    """The (n_positions, d_model) table PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i+1] = cos(same)."""
    if _shapes_only():
        return torch.empty(n_positions, d_model)
    position = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (n, 1)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # the 2i of each sin/cos pair
    angle = position / base ** (even / d_model)  # (n, ceil(d/2))
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # an odd d_model has one sin column more
    return table.to(torch.get_default_dtype())


def _check_length(offset: int, length: int, max_len: int) -> None:
    if offset + length > max_len:
        raise ValueError(
            f"position {offset + length - 1} is past the model's max_len of {max_len} positions"
        )


class SinusoidalPositional(nn.Module):
    """The fixed sinusoidal table as a module; not saved in the state dict (it is recomputed)."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        self.register_buffer("table", sinusoidal(max_len, d_model), persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """Encodings of positions offset .. offset+length-1: (length, d_model)."""
        _check_length(offset, length, self.max_len)
        return self.table[offset : offset + length]


class LearnedPositional(nn.Module):
    """One trained vector per position (GPT, BERT)."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        self.weight = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """Encodings of positions offset .. offset+length-1: (length, d_model)."""
        _check_length(offset, length, self.max_len)
        return self.weight[offset : offset + length]


class RotaryEmbedding(nn.Module):
    """RoPE: rotate each pair of features (2i, 2i+1) of a query or key at position p by p·θ_i,

    θ_i = base^(-2i/dim). Seen as complex numbers, x'_i = x_i · e^{j p θ_i}, so
    <rot(q, m), rot(k, n)> = Re(Σ q_i conj(k_i) e^{j (m-n) θ_i}) depends on m - n only.
    Applied per head: `dim` is the head dimension.
    """

    def __init__(self, dim: int, max_len: int, base: float = 10000.0):
        super().__init__()
        if dim % 2:
            raise ValueError(f"RoPE needs an even head dimension, got {dim}")
        self.dim = dim
        self.max_len = max_len
        if _shapes_only():
            cos, sin = torch.empty(max_len, dim // 2), torch.empty(max_len, dim // 2)
        else:
            inv_freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (dim/2,)
            position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
            angle = position * inv_freq  # (max_len, dim/2)
            dtype = torch.get_default_dtype()
            cos, sin = torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Rotate x (..., T, dim) whose first row is at position `offset`."""
        length = x.size(-2)
        _check_length(offset, length, self.max_len)
        cos = self.cos[offset : offset + length].to(x.dtype)  # (T, dim/2)
        sin = self.sin[offset : offset + length].to(x.dtype)
        pairs = x.unflatten(-1, (self.dim // 2, 2))  # (..., T, dim/2, 2)
        x_even, x_odd = pairs[..., 0], pairs[..., 1]  # (..., T, dim/2) each
        rotated = torch.stack(
            (x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1
        )  # (..., T, dim/2, 2)
        return rotated.flatten(-2)  # (..., T, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, max_len={self.max_len}"

