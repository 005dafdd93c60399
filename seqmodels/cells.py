"""The recurrent cells, one table: each cell's name, class, one-line tip and plot colour.

`seqmodels.RNN` builds its layers from the class, `seqmodels.config` checks the `cell` field
against the names, and the new-model dialog (tips), "Compare cells" (every cell, in its colour)
and `explorer train --cell` (help) read the same table, so a new cell is its class and one
`register_cell(RecurrentCell(...))`. A class is a `seqmodels.recurrent.RNNCell` subclass (its
`update(gi, state, recurrent)` is the cell's equations from the input projection, the previous
state and its own recurrent weights; one that also takes `see=None` and passes each gate through
`see(gate, value)` lets the activation layer read and replace its gates), or a "module:Class" name
imported when first built, so this module imports no torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RecurrentCell:
    name: str  # the config's `cell` value, e.g. "gru"
    cell_class: Any  # an RNNCell subclass, or "module:Class"
    tip: str  # one line, after the course notes
    colour: str  # its curve in "Compare cells" ("#rrggbb")

    def resolve(self) -> type:
        if isinstance(self.cell_class, str):
            module, _, name = self.cell_class.partition(":")
            return getattr(importlib.import_module(module), name)
        return self.cell_class


_CELLS: dict[str, RecurrentCell] = {
    cell.name: cell
    for cell in (
        RecurrentCell("rnn", "seqmodels.recurrent:RNNCell",
                      "Vanilla RNN: h_t = tanh(A h_{t-1} + B x_t); gradients vanish or explode "
                      "over time", "#d62728"),
        RecurrentCell("ugrnn", "seqmodels.recurrent:UGRNNCell",
                      "Update-gate RNN: one gate u mixes old state and candidate; u≈1 keeps "
                      "state long", "#ff7f0e"),
        RecurrentCell("gru", "seqmodels.recurrent:GRUCell",
                      "GRU: reset and update gates; the most learnable gated RNN for shallow "
                      "nets", "#2ca02c"),
        RecurrentCell("gru-cho", "seqmodels.recurrent:ChoGRUCell",
                      "GRU as Cho et al. (2014) write it: the reset gate scales h before W_hn "
                      "(gru scales W_hn h); no fused kernel", "#8c564b"),
        RecurrentCell("mgu", "seqmodels.mgu:MGUCell",
                      "Minimal gated unit: one forget gate f both mixes and resets the state",
                      "#17becf"),
        RecurrentCell("lstm", "seqmodels.recurrent:LSTMCell",
                      "LSTM: input, forget and output gates around an additive cell state c_t",
                      "#1f77b4"),
    )
}


def register_cell(cell: RecurrentCell) -> None:
    """Add (or replace) a cell; every reader of the table sees it from then on."""
    _CELLS[cell.name] = cell


def cells() -> dict[str, RecurrentCell]:
    """Every cell by name, in registration order."""
    return dict(_CELLS)


def cell_names() -> tuple[str, ...]:
    return tuple(_CELLS)


def cell_tips() -> dict[str, str]:
    return {name: cell.tip for name, cell in _CELLS.items()}


def cell_class(name: str) -> type:
    """The cell class called `name`; ValueError naming the choices otherwise."""
    if name not in _CELLS:
        raise ValueError(f"unknown cell {name!r}; choose one of {', '.join(_CELLS)}")
    return _CELLS[name].resolve()
