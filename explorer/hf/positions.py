"""What a Hugging Face model really uses for positions, for the positional panel. Qt-free.

* learned tables: GPT-2's `wpe`, BERT's and DistilBERT's `position_embeddings`, BART's
  `embed_positions` (whose rows start at its offset 2);
* sinusoidal tables: Marian's `embed_positions` (the notes' PE with the sin dimensions first and
  the cos dimensions second), DistilBERT with `sinusoidal_pos_embds`;
* T5's relative-position bias: a learned scalar per head and distance bucket, added to every
  attention score, b[h, q, k] = E[bucket(k - q), h], with transformers' own bucket function;
* rotary positions (RoPE) and anything else: no table, and a one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from explorer.analysis.positional import DEFAULT_BASE, ModelPositions, sinusoidal

TABLE_NAMES = ("wpe", "position_embeddings", "embed_positions")  # the modules' attribute names


@dataclass
class RelativeBias:
    """One stack's relative-position bias on `length` query and key positions."""

    stack: str  # "encoder" (bidirectional buckets) or "decoder" (causal buckets)
    bidirectional: bool
    num_buckets: int
    max_distance: int
    bias: np.ndarray  # (H, Q, K): added to the attention score of query q for key k, per head
    buckets: np.ndarray  # (Q, K) bucket of k - q
    table: np.ndarray  # (num_buckets, H): the learned relative_attention_bias weight
    distances: np.ndarray  # (2 * length - 1,) k - q from -(length - 1) to length - 1
    by_distance: np.ndarray  # (H, 2 * length - 1): each head's bias at each distance


def _stack_of(name: str) -> str:
    return "decoder" if "decoder" in name.split(".") else "encoder"


def position_table(hf_model) -> tuple[str, nn.Embedding] | None:
    """(module name, module) of the model's absolute position table, encoder's first, or None."""
    for name, module in hf_model.named_modules():
        if isinstance(module, nn.Embedding) and name.rsplit(".", 1)[-1] in TABLE_NAMES:
            return name, module
    return None


def _is_sinusoidal(hf_model, module) -> bool:
    return ("Sinusoidal" in type(module).__name__
            or bool(getattr(hf_model.config, "sinusoidal_pos_embds", False)))


def notes_layout(table: np.ndarray) -> np.ndarray:
    """A half-split sinusoidal table (sin of every frequency, then cos of every frequency: Marian,
    BART-style) with its columns put back in the notes' order (sin, cos pairs interleaved)."""
    dim = table.shape[1]
    half = (dim + 1) // 2
    out = np.empty_like(table)
    out[:, 0::2] = table[:, :half]
    out[:, 1::2] = table[:, half:]
    return out


def sinusoidal_check(table: np.ndarray) -> tuple[str, float]:
    """(layout, max |table - notes' PE|): the layout ("interleaved" or "sin half, cos half")
    whose reading of the table lies closer to the lecture notes' formula, and that distance."""
    reference = sinusoidal(table.shape[0], table.shape[1], DEFAULT_BASE)
    interleaved = float(np.abs(table - reference).max())
    halves = float(np.abs(notes_layout(table) - reference).max())
    return ("interleaved", interleaved) if interleaved <= halves else ("sin half, cos half", halves)


def hf_model_positions(model, num_positions: int | None = None) -> ModelPositions | None:
    """The learned or sinusoidal table an adapter's model adds to its token embeddings, or None."""
    found = position_table(model.hf)
    if found is None:
        return None
    name, module = found
    offset = int(getattr(module, "offset", 0))  # BART: rows 0 and 1 are never a position
    table = module.weight.detach().cpu().double().numpy()[offset:]
    table = table[:num_positions].copy() if num_positions else table.copy()
    size = f"{table.shape[0]} x {table.shape[1]}"
    if _is_sinusoidal(model.hf, module):
        layout, error = sinusoidal_check(table)
        note = (f"{name} is the notes' sinusoidal PE ({layout}): max |difference| = {error:.1e}")
        return ModelPositions("sinusoidal", table, f"{name}: sinusoidal table, {size}", note)
    note = f"{name}: learned table, {size}" + (f" (rows from {offset})" if offset else "")
    return ModelPositions("learned", table, note, note)


def relative_bias_modules(hf_model) -> dict[str, nn.Module]:
    """stack -> the attention module that owns the stack's `relative_attention_bias` (T5: the
    first block's self-attention; every block of the stack reuses its bias)."""
    found: dict[str, nn.Module] = {}
    for name, module in hf_model.named_modules():
        if isinstance(getattr(module, "relative_attention_bias", None), nn.Embedding):
            found.setdefault(_stack_of(name), module)
    return found


def relative_bias(model, length: int) -> list[RelativeBias]:
    """The relative-position bias of every stack on `length` positions (empty: the model has none),
    from the learned table and transformers' own bucket function."""
    result = []
    for stack, attention in relative_bias_modules(model.hf).items():
        bidirectional = not bool(getattr(attention, "is_decoder", stack == "decoder"))
        num_buckets = attention.relative_attention_num_buckets
        max_distance = attention.relative_attention_max_distance
        positions = torch.arange(length)
        distances = torch.arange(-(length - 1), length)  # (2L - 1,)
        relative = positions[None, :] - positions[:, None]  # (Q, K): k - q

        def bucket(rel):
            return type(attention)._relative_position_bucket(
                rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)

        buckets = bucket(relative)
        table = attention.relative_attention_bias.weight.detach().cpu().double()  # (buckets, H)
        bias = table[buckets].permute(2, 0, 1)  # (Q, K, H) -> (H, Q, K)
        result.append(RelativeBias(
            stack, bidirectional, num_buckets, max_distance, bias.numpy().copy(),
            buckets.numpy().copy(), table.numpy().copy(), distances.numpy().copy(),
            table[bucket(distances)].T.numpy().copy()))  # (2L - 1, H) -> (H, 2L - 1)
    return result


def no_table_reason(model) -> str:
    """One line: why the model has no absolute position table to show."""
    hf = model.hf
    if relative_bias_modules(hf):
        return ("no position table: T5 adds a learned bias per head and relative distance to "
                "the attention scores (see the relative-position page)")
    rotary = any("Rotary" in type(m).__name__ for m in hf.modules())
    if rotary or getattr(hf.config, "rope_theta", None) or getattr(hf.config, "rope_parameters", None):
        return ("no position table: rotary positions (RoPE) rotate each head's queries and keys "
                "by n·θ inside attention; nothing is added to the embeddings")
    return f"no position table: a {hf.config.model_type} model adds no absolute positions"
