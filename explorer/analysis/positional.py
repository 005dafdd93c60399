"""Positional-encoding analysis for the positional panel and `explorer export`. Qt-free, numpy only.

The lecture notes' sinusoidal encoding (Vaswani et al.):

    PE[n, i] = sin(n / L^(i/D))        i even
    PE[n, i] = cos(n / L^((i-1)/D))    i odd

and its relative-position property: PE(n+k) is a fixed linear map of PE(n) whose coefficients depend
only on k (each (sin, cos) pair is rotated by the angle k * frequency). `fit_shift_map` fits
that map by least squares, so a learned table can be held against the same test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_BASE = 10000.0


def frequencies(dim: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """Angular frequency of each (sin, cos) pair: 1 / base^(2j/dim), shape (ceil(dim/2),)."""
    even_dims = np.arange(0, dim, 2, dtype=np.float64)
    return 1.0 / base ** (even_dims / dim)


def sinusoidal(num_positions: int, dim: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """The sinusoidal table, positions x dimensions: (num_positions, dim), float64."""
    positions = np.arange(num_positions, dtype=np.float64)[:, None]  # (N, 1)
    angles = positions * frequencies(dim, base)[None, :]  # (N, ceil(D/2))
    table = np.empty((num_positions, dim), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : dim // 2])
    return table


def similarity(table: np.ndarray, kind: str = "cosine") -> np.ndarray:
    """Similarity between every pair of positions (rows of `table`): (N, N)."""
    if kind == "dot":
        return table @ table.T
    if kind == "cosine":
        norms = np.linalg.norm(table, axis=1, keepdims=True)  # (N, 1)
        unit = table / np.maximum(norms, 1e-12)
        return unit @ unit.T
    raise ValueError(f"unknown similarity {kind!r}; choose 'dot' or 'cosine'")


@dataclass
class ShiftFit:
    shift: int  # k
    matrix: np.ndarray  # M_k, (D, D): PE(n+k) ~= PE(n) @ M_k
    residual: float  # RMS of PE[k:] - PE[:-k] @ M_k
    relative_residual: float  # residual / RMS of PE[k:]
    rows_used: int  # how many (n, n+k) pairs the fit saw


def fit_shift_map(table: np.ndarray, shift: int) -> ShiftFit:
    """Least-squares M_k with table[n + k] ~= table[n] @ M_k for every n that has a partner.

    The fit is only a test when there are more pairs than dimensions; with fewer, any table fits.
    """
    num_positions, dim = table.shape
    if not 0 < shift < num_positions:
        raise ValueError(f"shift {shift} must be between 1 and {num_positions - 1}")
    table = np.asarray(table, dtype=np.float64)
    before, after = table[:-shift], table[shift:]  # (N-k, D) each
    shift_map, *_ = np.linalg.lstsq(before, after, rcond=None)  # (D, D)
    error = before @ shift_map - after
    residual = float(np.sqrt(np.mean(error**2)))
    scale = float(np.sqrt(np.mean(after**2)))
    return ShiftFit(shift, shift_map, residual, residual / max(scale, 1e-300), len(before))


def shift_residuals(table: np.ndarray, shifts) -> np.ndarray:
    """Relative residual of the fitted M_k for each k in `shifts`."""
    return np.array([fit_shift_map(table, k).relative_residual for k in shifts])


@dataclass
class ModelPositions:
    """What a loaded model uses for positions, as a positions x dimensions table."""

    kind: str  # "sinusoidal", "learned" or "rope"
    table: np.ndarray  # (N, D): the learned table, the sinusoidal buffer, or RoPE's cos/sin angles
    description: str
    note: str = ""  # one line for the status: what was checked (a Hugging Face model's table)


def _family_positions(model):
    """The family's own positions reader (explorer.families: Hugging Face models), or None."""
    from explorer.errors import UserError
    from explorer.families import family_of

    if not hasattr(getattr(model, "config", None), "family"):
        return None  # a torch module of no family: look for our positional modules
    try:
        return family_of(model).positions
    except UserError:  # a family the registry does not know
        return None


def model_positions(model, num_positions: int | None = None) -> ModelPositions | None:
    """The positional table a Transformer-family model actually uses, or None if it has none.

    Learned: the trained table. Sinusoidal: the fixed buffer the model adds. RoPE: nothing is added;
    each (even, odd) pair of a head's query/key is rotated by n * theta_j, shown as
    [sin(n theta_j), cos(n theta_j)] columns so it lines up with the sinusoidal reference.
    """
    from seqmodels.positional import LearnedPositional, RotaryEmbedding, SinusoidalPositional

    own_reader = _family_positions(model)
    if own_reader is not None:  # a Hugging Face model: its own modules (explorer.hf.positions)
        return own_reader(model, num_positions)
    for module in model.modules():
        if isinstance(module, LearnedPositional):
            table = module.weight.detach().cpu().double().numpy()[:num_positions].copy()
            size = f"{table.shape[0]} x {table.shape[1]}"
            return ModelPositions("learned", table, f"learned table, {size}")
        if isinstance(module, SinusoidalPositional):
            table = module.table.detach().cpu().double().numpy()[:num_positions].copy()
            size = f"{table.shape[0]} x {table.shape[1]}"
            return ModelPositions("sinusoidal", table, f"sinusoidal table, {size}")
        if isinstance(module, RotaryEmbedding):
            sin = module.sin.detach().cpu().double().numpy()[:num_positions]  # (N, head_dim/2)
            cos = module.cos.detach().cpu().double().numpy()[:num_positions]
            table = np.empty((sin.shape[0], 2 * sin.shape[1]), dtype=np.float64)
            table[:, 0::2] = sin
            table[:, 1::2] = cos
            return ModelPositions("rope", table, f"RoPE rotation angles, head dim {module.dim}")
    return None
