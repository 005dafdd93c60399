"""The Minimal Gated Unit (Zhou et al., 2016, "Minimal gated unit for recurrent neural networks"):
one forget gate, which also resets the state the candidate reads.

    f_t = σ(W_f x_t + U_f h_{t-1} + b_f)
    h̃_t = tanh(W_h x_t + U_h (f_t ⊙ h_{t-1}) + b_h)
    h_t = (1 - f_t) ⊙ h_{t-1} + f_t ⊙ h̃_t

Row blocks (f, h̃) of weight_ih (the W) and weight_hh (the U); each b is split into an input and a
recurrent part like torch's cells. No fused kernel: it runs step by step.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqmodels.recurrent import Recurrent, RNNCell


class MGUCell(RNNCell):
    gate_names = ("f", "candidate")
    num_blocks = 2

    @staticmethod
    def update(gi: Tensor, h: Tensor, recurrent: Recurrent, see=None):
        x_f, x_h = gi.chunk(2, dim=-1)  # W_f x + b, W_h x + b: each (B, H)
        f = torch.sigmoid(x_f + recurrent(h, 0))
        if see is not None:
            f = see("f", f)
        candidate = torch.tanh(x_h + recurrent(f * h, 1))
        if see is not None:
            candidate = see("candidate", candidate)
        return (1 - f) * h + f * candidate, {"f": f, "candidate": candidate}
