"""Incremental-decoding state: a (possibly nested) dict/list/tuple of tensors, batch dimension first."""

from __future__ import annotations

from typing import Any

import torch


def map_state(state: Any, fn) -> Any:
    if isinstance(state, torch.Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {k: map_state(v, fn) for k, v in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(map_state(v, fn) for v in state)
    return state


def reorder_state(state: Any, index: torch.Tensor) -> Any:
    """Select batch rows `index` of every tensor in `state` (beam search's cache reordering)."""
    return map_state(state, lambda t: t.index_select(0, index.to(t.device)))


def repeat_state(state: Any, times: int) -> Any:
    """Repeat every batch row `times` times in place order: rows b*times .. b*times+times-1 copy row b."""
    return map_state(state, lambda t: t.repeat_interleave(times, dim=0))
