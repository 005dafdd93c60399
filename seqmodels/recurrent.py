"""Recurrent cells (Elman RNN, UGRNN, GRU in torch's and Cho et al.'s form, LSTM) and the multi-layer, bidirectional `RNN` built from them.

Every time step is an explicit Python step, so a trace can hand out the very tensors the recurrence
used: `torch.autograd.grad(loss, trace.hidden["l0"])` gives the total dL/dh_t for every t.

The Elman, GRU and LSTM layers use torch.nn.RNN/GRU/LSTM's parameter names, shapes, gate order and
initialisation, so a state dict from torch's module loads into ours and computes the same function.
A cell's weights stack its blocks row-wise: weight_ih is (blocks * H, I), weight_hh is (blocks * H, H).

Without a trace, the Elman, GRU and LSTM layers hand those same parameters to torch's fused kernels
(as torch.nn.RNNBase does), which is several times faster; the step-by-step path computes the same
function and is kept for traces and for the cells that have no fused kernel (UGRNN, Cho's GRU,
the MGU of seqmodels/mgu.py, any registered later).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, _VF, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from seqmodels.cells import cell_class
from seqmodels.trace import Trace


@dataclass(frozen=True)
class Recurrent:
    """A cell's recurrent weights, what it multiplies the previous state by: W_hh (blocks * H, H) and
    b_hh (blocks * H,), its row blocks in the cell's gate order. `recurrent(h)` is every block's
    W h + b at once; `recurrent(v, block)` one block's (a cell that multiplies a gated state, as
    the MGU's U_h (f ⊙ h), asks for that block alone)."""

    weight: Tensor
    bias: Tensor

    def __call__(self, h: Tensor, block: int | None = None) -> Tensor:
        if block is None:
            return F.linear(h, self.weight, self.bias)  # (B, blocks * H)
        rows = slice(block * h.shape[-1], (block + 1) * h.shape[-1])
        return F.linear(h, self.weight[rows], self.bias[rows])  # (B, H)


class RNNCell(nn.Module):
    """Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).

    The contract of a cell: `update(gi, state, recurrent, see=None) -> (state, gates)` computes one
    step from gi = W_ih x_t + b_ih (every step's input projection is made at once), the previous
    state (h, or (h, c) when `has_cell_state`) and its recurrent weights (`Recurrent`), so a cell
    writes its recurrence as its paper does. `see`: None, or fn(gate name, value) -> the value the
    equations go on with (the activation layer's hook on the gates)."""

    gate_names: tuple[str, ...] = ()  # names of the row blocks worth showing (none here)
    num_blocks = 1  # row blocks in weight_ih / weight_hh
    has_cell_state = False

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        rows = self.num_blocks * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(rows, input_size))
        self.weight_hh = nn.Parameter(torch.empty(rows, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(rows))
        self.bias_hh = nn.Parameter(torch.empty(rows))
        init_uniform(self.parameters(), hidden_size)

    def forward(self, x: Tensor, state=None):
        """One step on x (B, I); returns the new state like torch's cells: h, or (h, c) for LSTM."""
        if state is None:
            state = self.zero_state(x)
        gi = F.linear(x, self.weight_ih, self.bias_ih)  # (B, blocks * H)
        new_state, _ = self.update(gi, state, Recurrent(self.weight_hh, self.bias_hh))
        return new_state

    def zero_state(self, x: Tensor):
        h = x.new_zeros(x.shape[0], self.hidden_size)
        return (h, h.clone()) if self.has_cell_state else h

    @staticmethod
    def update(gi: Tensor, h: Tensor, recurrent: Recurrent, see=None):
        return torch.tanh(gi + recurrent(h)), {}


class UGRNNCell(RNNCell):
    """Update-gate RNN (Collins et al., 2017), from the lecture notes:
    u_t = σ(A_uh h + A_ux x + b_u), s_t = tanh(A_sh h + A_sx x + b_s), h_t = u ⊙ h_{t-1} + (1 - u) ⊙ s_t.
    Row blocks (u, s); the biases b_u, b_s are split into an input and a hidden part like torch's cells.
    """

    gate_names = ("u", "s")
    num_blocks = 2

    @staticmethod
    def update(gi: Tensor, h: Tensor, recurrent: Recurrent, see=None):
        u_in, s_in = (gi + recurrent(h)).chunk(2, dim=-1)  # each (B, H)
        u, s = torch.sigmoid(u_in), torch.tanh(s_in)
        if see is not None:
            u, s = see("u", u), see("s", s)
        return u * h + (1 - u) * s, {"u": u, "s": s}


class GRUCell(RNNCell):
    """GRU with torch's gate order (r, z, n), the reset gate after the product as torch and cuDNN
    compute it: n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h_t = z ⊙ h + (1 - z) ⊙ n, so state
    dicts are interchangeable with torch.nn.GRU. z is the notes' update gate u."""

    gate_names = ("r", "z", "n")
    num_blocks = 3

    @staticmethod
    def update(gi: Tensor, h: Tensor, recurrent: Recurrent, see=None):
        i_r, i_z, i_n = gi.chunk(3, dim=-1)  # each (B, H)
        h_r, h_z, h_n = recurrent(h).chunk(3, dim=-1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        if see is not None:
            r, z = see("r", r), see("z", z)
        n = torch.tanh(i_n + r * h_n)
        if see is not None:
            n = see("n", n)
        return z * h + (1 - z) * n, {"r": r, "z": z, "n": n}


class ChoGRUCell(GRUCell):
    """GRU as Cho et al. (2014) and the notes write it, the reset gate before the product:
    n = tanh(W_in x + b_in + W_hn (r ⊙ h) + b_hn). Same weights and gate order as GRUCell."""

    @staticmethod
    def update(gi: Tensor, h: Tensor, recurrent: Recurrent, see=None):
        i_r, i_z, i_n = gi.chunk(3, dim=-1)  # each (B, H)
        r = torch.sigmoid(i_r + recurrent(h, 0))
        z = torch.sigmoid(i_z + recurrent(h, 1))
        if see is not None:
            r, z = see("r", r), see("z", z)
        n = torch.tanh(i_n + recurrent(r * h, 2))
        if see is not None:
            n = see("n", n)
        return z * h + (1 - z) * n, {"r": r, "z": z, "n": n}


class LSTMCell(RNNCell):
    """LSTM with torch's gate order (i, f, g, o); g is the notes' candidate s_t.
    c_t = f ⊙ c_{t-1} + i ⊙ g, h_t = o ⊙ tanh(c_t)."""

    gate_names = ("i", "f", "g", "o")
    num_blocks = 4
    has_cell_state = True

    @staticmethod
    def update(gi: Tensor, state: tuple[Tensor, Tensor], recurrent: Recurrent, see=None):
        h, c = state
        i_in, f_in, g_in, o_in = (gi + recurrent(h)).chunk(4, dim=-1)  # each (B, H)
        i, f, g, o = torch.sigmoid(i_in), torch.sigmoid(f_in), torch.tanh(g_in), torch.sigmoid(o_in)
        if see is not None:
            i, f, g, o = see("i", i), see("f", f), see("g", g), see("o", o)
        c_next = f * c + i * g
        return (o * torch.tanh(c_next), c_next), {"i": i, "f": f, "g": g, "o": o}


# torch's fused multi-layer kernels, called with torch.nn.RNN/GRU/LSTM's flat weight list.
# A cell registered later (seqmodels.cells) has none: it runs step by step.
FUSED_KERNELS = {"rnn": _VF.rnn_tanh, "gru": _VF.gru, "lstm": _VF.lstm}
CUDNN_MODES = {"rnn": "RNN_TANH", "gru": "GRU", "lstm": "LSTM"}  # what cuDNN calls those kernels


def init_uniform(parameters, hidden_size: int) -> None:
    """torch's recurrent initialisation: every weight and bias ~ U(-1/sqrt(H), 1/sqrt(H))."""
    bound = 1.0 / math.sqrt(hidden_size)
    for p in parameters:
        nn.init.uniform_(p, -bound, bound)


class RNN(nn.Module):
    """A stack of recurrent layers, optionally bidirectional, with torch.nn.RNN/GRU/LSTM's interface.

    forward(input, hx=None) -> (output, h_n), or (output, (h_n, c_n)) for "lstm"; with trace=True a
    seqmodels.Trace is appended. `pad_mask` (B, T), True = padding, makes padded steps carry the state
    through unchanged and output zeros, like a packed sequence: h_n is each row's state after its last
    real token, and the reverse direction starts there.

    `activation_hook`: None, or fn(layer name "l0" / "l0_reverse", quantity "h" / "c" / "gate_<g>",
    position t, value (B, H)) -> the value the recurrence goes on with, called at every step
    (explorer.analysis.activations sets it for one pass). While set, the steps run in Python.
    """

    activation_hook = None  # idle: one attribute check per call

    def __init__(
        self,
        cell: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bidirectional: bool = False,
        batch_first: bool = False,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.cell = cell
        self.cell_type = cell_class(cell)  # the cell registry, seqmodels.cells
        # a cell whose update takes `see` lets the activation layer read and replace its gates
        self._cell_sees_gates = "see" in inspect.signature(self.cell_type.update).parameters
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bidirectional, self.batch_first, self.dropout = bidirectional, batch_first, dropout
        self.num_directions = 2 if bidirectional else 1
        rows = self.cell_type.num_blocks * hidden_size
        # Registered in torch's order, so state_dict() lists keys exactly as torch's module does.
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * self.num_directions
            shapes = {
                "weight_ih": (rows, layer_input),
                "weight_hh": (rows, hidden_size),
                "bias_ih": (rows,),
                "bias_hh": (rows,),
            }
            for suffix in self.direction_suffixes():
                for kind, shape in shapes.items():
                    self.register_parameter(f"{kind}_l{layer}{suffix}", nn.Parameter(torch.empty(shape)))
        init_uniform(self.parameters(), hidden_size)

    def direction_suffixes(self) -> tuple[str, ...]:
        return ("", "_reverse") if self.bidirectional else ("",)

    def extra_repr(self) -> str:
        return (
            f"{self.cell}, {self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, "
            f"bidirectional={self.bidirectional}, batch_first={self.batch_first}, dropout={self.dropout}"
        )

    def forward(self, input: Tensor, hx=None, trace: bool = False, pad_mask: Tensor | None = None):
        is_lstm = self.cell_type.has_cell_state
        unbatched = input.dim() == 2
        x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
        # x: (T, B, I) from here on
        if pad_mask is not None:
            pad_mask = pad_mask.unsqueeze(0) if unbatched else pad_mask  # (B, T)
            if not pad_mask.any():
                pad_mask = None
        h0, c0 = self.initial_state(x, hx, unbatched)

        hooked = self.activation_hook is not None
        if (not trace and not hooked and self.cell in FUSED_KERNELS
                and (pad_mask is None or is_right_padding(pad_mask))):
            x, h_n, c_n = self.run_fused(x, h0, c0, pad_mask)
            record = None
        else:
            x, h_n, c_n, record = self.run_cells(x, h0, c0, pad_mask, trace)

        output = x.squeeze(1) if unbatched else (x.transpose(0, 1) if self.batch_first else x)
        h_n = h_n.squeeze(1) if unbatched else h_n
        if is_lstm:
            h_n = (h_n, c_n.squeeze(1) if unbatched else c_n)
        return (output, h_n, record) if trace else (output, h_n)

    def flat_weights(self) -> list[Tensor]:
        """The parameters in the order of torch.nn.RNN/GRU/LSTM's flat weight list."""
        kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        return [getattr(self, f"{kind}_l{layer}{suffix}")
                for layer in range(self.num_layers) for suffix in self.direction_suffixes()
                for kind in kinds]

    def _apply(self, fn, recurse=True):
        moved = super()._apply(fn, recurse)
        self.flatten_parameters()  # after .to(device) / .cuda(), as torch.nn.RNNBase does
        return moved

    def flatten_parameters(self) -> None:
        """On CUDA, lay the fused kernel's weights out in one cuDNN buffer, as torch.nn.RNNBase
        does: otherwise cuDNN copies them into one at every call (and warns). No-op elsewhere."""
        if self.cell not in CUDNN_MODES:
            return
        weights = self.flat_weights()
        first = weights[0]
        if (not all(w.is_cuda and w.dtype == first.dtype for w in weights)
                or not all(torch.backends.cudnn.is_acceptable(w) for w in weights)
                or len({w.data_ptr() for w in weights}) != len(weights)):
            return
        import torch.backends.cudnn.rnn as cudnn_rnn

        with torch.cuda.device_of(first), torch.no_grad():
            if torch._use_cudnn_rnn_flatten_weight():
                torch._cudnn_rnn_flatten_weight(
                    weights, 4, self.input_size, cudnn_rnn.get_cudnn_mode(CUDNN_MODES[self.cell]),
                    self.hidden_size, 0, self.num_layers, False, self.bidirectional)

    def run_fused(self, x: Tensor, h0: Tensor, c0: Tensor | None, pad_mask: Tensor | None):
        """All layers and directions in one call of torch's kernel. x (T, B, I), h0 and c0 (L * D, B, H).
        A right-padded batch goes in packed, which is what makes padded steps keep the state.
        -> (outputs (T, B, D * H), h_n, c_n or None)."""
        kernel, is_lstm = FUSED_KERNELS[self.cell], self.cell_type.has_cell_state
        settings = (self.flat_weights(), True, self.num_layers, self.dropout, self.training,
                    self.bidirectional)
        if pad_mask is None:
            result = kernel(x, (h0, c0) if is_lstm else h0, *settings, False)  # batch_first=False
            return result[0], result[1], (result[2] if is_lstm else None)
        lengths = (~pad_mask).sum(dim=1).cpu()  # (B,)
        packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
        # The kernel reads rows longest first: reorder the initial state to match, and back after.
        h0 = h0.index_select(1, packed.sorted_indices)
        c0 = c0.index_select(1, packed.sorted_indices) if is_lstm else None
        result = kernel(packed.data, packed.batch_sizes, (h0, c0) if is_lstm else h0, *settings)
        outputs = PackedSequence(result[0], packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        outputs, _ = pad_packed_sequence(outputs, total_length=x.shape[0])  # (T, B, D * H), zeros at padding
        h_n = result[1].index_select(1, packed.unsorted_indices)
        c_n = result[2].index_select(1, packed.unsorted_indices) if is_lstm else None
        return outputs, h_n, c_n

    def run_cells(self, x: Tensor, h0: Tensor, c0: Tensor | None, pad_mask: Tensor | None, trace: bool):
        """Layer by layer, direction by direction, step by step. -> (outputs (T, B, D * H), h_n, c_n, trace)."""
        is_lstm = self.cell_type.has_cell_state
        keep = None if pad_mask is None else (~pad_mask).transpose(0, 1).unsqueeze(-1)  # (T, B, 1), True = real
        record = Trace() if trace else None
        final_h, final_c = [], []
        for layer in range(self.num_layers):
            direction_outputs = []
            for direction, suffix in enumerate(self.direction_suffixes()):
                index = layer * self.num_directions + direction
                state = (h0[index], c0[index]) if is_lstm else h0[index]
                outputs, state = self.run_direction(x, state, layer, suffix, keep, record)
                direction_outputs.append(outputs)
                final_h.append(state[0] if is_lstm else state)
                if is_lstm:
                    final_c.append(state[1])
            x = torch.cat(direction_outputs, dim=-1)  # (T, B, D * H)
            if layer < self.num_layers - 1 and self.dropout > 0:
                x = F.dropout(x, self.dropout, self.training)
        h_n = torch.stack(final_h)  # (L * D, B, H)
        c_n = torch.stack(final_c) if is_lstm else None  # (L * D, B, H)
        return x, h_n, c_n, record

    def initial_state(self, x: Tensor, hx, unbatched: bool) -> tuple[Tensor, Tensor | None]:
        """hx as torch takes it, (L * D, B, H) (or (L * D, H) unbatched), or zeros; -> (h0, c0)."""
        shape = (self.num_layers * self.num_directions, x.shape[1], self.hidden_size)
        if hx is None:
            zeros = x.new_zeros(shape)
            return zeros, (zeros if self.cell_type.has_cell_state else None)
        h0, c0 = hx if self.cell_type.has_cell_state else (hx, None)
        if unbatched:
            h0 = h0.unsqueeze(1)  # (L * D, 1, H)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        if h0.shape != shape:
            raise ValueError(f"expected hidden state of shape {tuple(shape)}, got {tuple(h0.shape)}")
        return h0, c0

    def run_direction(self, x: Tensor, state, layer: int, suffix: str, keep, record: Trace | None):
        """One layer, one direction over x (T, B, I). -> (outputs (T, B, H), final state)."""
        kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        w_ih, w_hh, b_ih, b_hh = (getattr(self, f"{kind}_l{layer}{suffix}") for kind in kinds)
        gi_all = F.linear(x, w_ih, b_ih)  # (T, B, blocks * H): every step's input projection at once
        recurrent = Recurrent(w_hh, b_hh)
        is_lstm = self.cell_type.has_cell_state
        steps = range(x.shape[0] - 1, -1, -1) if suffix == "_reverse" else range(x.shape[0])
        outputs: list = [None] * x.shape[0]  # indexed by position, whatever the reading direction
        hiddens, cells = list(outputs), list(outputs)
        gates: dict[str, list] = {g: list(outputs) for g in self.cell_type.gate_names}
        hook, name = self.activation_hook, f"l{layer}{suffix}"
        for t in steps:
            if hook is not None and self._cell_sees_gates:
                see = (lambda gate, value, t=t: hook(name, "gate_" + gate, t, value))
                new_state, step_gates = self.cell_type.update(gi_all[t], state, recurrent, see)
            else:
                new_state, step_gates = self.cell_type.update(gi_all[t], state, recurrent)
            if keep is not None:  # a padded step carries the state through unchanged
                if is_lstm:
                    new_state = tuple(torch.where(keep[t], new, old) for new, old in zip(new_state, state))
                else:
                    new_state = torch.where(keep[t], new_state, state)
            if hook is not None:
                new_state = ((hook(name, "h", t, new_state[0]), hook(name, "c", t, new_state[1])) if is_lstm
                             else hook(name, "h", t, new_state))
            state = new_state
            h = state[0] if is_lstm else state
            # The output is computed from the very tensor the recurrence carries on, so dL/dh_t is total.
            outputs[t] = h if keep is None else h * keep[t]  # padded steps output zeros
            if record is not None:
                hiddens[t] = h
                if is_lstm:
                    cells[t] = state[1]
                for g, value in step_gates.items():
                    gates[g][t] = value
        if record is not None:
            record.hidden[name] = hiddens
            if is_lstm:
                record.cell[name] = cells
            if gates:
                record.gates[name] = gates
        return torch.stack(outputs), state  # (T, B, H)


def is_right_padding(pad_mask: Tensor) -> bool:
    """True when every row of pad_mask (B, T) is real tokens then padding, with at least one real token:
    the batches a packed sequence can express."""
    lengths = (~pad_mask).sum(dim=1, keepdim=True)  # (B, 1)
    positions = torch.arange(pad_mask.shape[1], device=pad_mask.device)  # (T,)
    return bool(lengths.min() > 0) and torch.equal(pad_mask, positions >= lengths)


def to_torch_state(state: dict | None):
    """Batch-first {"h": (B, L, H)[, "c"]} -> torch's (L, B, H) or ((L, B, H), (L, B, H))."""
    if state is None:
        return None
    h = state["h"].transpose(0, 1).contiguous()  # (L, B, H)
    if "c" in state:
        return h, state["c"].transpose(0, 1).contiguous()
    return h


def to_batch_first_state(final) -> dict:
    """torch's (L, B, H) final state (or (h, c)) -> {"h": (B, L, H)[, "c": (B, L, H)]}."""
    if isinstance(final, tuple):
        return {"h": final[0].transpose(0, 1), "c": final[1].transpose(0, 1)}
    return {"h": final.transpose(0, 1)}


def prefixed(trace: Trace, prefix: str, into: Trace | None = None) -> Trace:
    """The trace of a seqmodels.RNN with its layer names under `prefix` ("l0" -> "lm.l0"), merged into `into`."""
    out = into if into is not None else Trace()
    out.attention.extend(trace.attention)
    out.hidden.update({prefix + k: v for k, v in trace.hidden.items()})
    out.cell.update({prefix + k: v for k, v in trace.cell.items()})
    out.gates.update({prefix + k: v for k, v in trace.gates.items()})
    return out


def concat_traces(traces: list[Trace]) -> Trace:
    """Per-step traces of successive calls (one step each) joined into one trace over all steps."""
    out = Trace()
    for trace in traces:
        for name, steps in trace.hidden.items():
            out.hidden.setdefault(name, []).extend(steps)
        for name, steps in trace.cell.items():
            out.cell.setdefault(name, []).extend(steps)
        for name, gates in trace.gates.items():
            merged = out.gates.setdefault(name, {})
            for gate, steps in gates.items():
                merged.setdefault(gate, []).extend(steps)
    return out
