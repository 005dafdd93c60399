"""A cell the explorer does not ship: minGRU (Feng et al., 2024, "Were RNNs all we needed?"),
whose gate and candidate read only the input: z_t = σ(W_z x_t), h̃_t = W_h x_t,
h_t = (1 - z_t) ⊙ h_{t-1} + z_t ⊙ h̃_t. This one file is the whole cell; `register()` adds it."""

from __future__ import annotations

import torch
from torch import Tensor

from seqmodels.cells import RecurrentCell, register_cell
from seqmodels.recurrent import RNNCell


class MinGRUCell(RNNCell):
    gate_names = ("z",)
    num_blocks = 2  # rows (z, h̃) of weight_ih; weight_hh exists but the cell never reads h there

    @staticmethod
    def update(gi: Tensor, h: Tensor, recurrent):
        z_in, candidate = gi.chunk(2, dim=-1)  # each (B, H); `recurrent` is unused: no h in the gates
        z = torch.sigmoid(z_in)
        return (1 - z) * h + z * candidate, {"z": z}


def register() -> None:
    register_cell(RecurrentCell("mingru", MinGRUCell, "minGRU: gate and candidate from the input "
                                "only, so training can scan in parallel", "#9467bd"))
