"""Gradient flow: ||dL/dh_t|| through time for recurrent layers, ||dL/d(block output)|| through depth.

All gradients come from `torch.autograd.grad` on the hidden states a trace hands out, so they are
total derivatives (every path from h_t to the loss) and the parameters' `.grad` is never touched.
For a one-unit tanh RNN in its linear regime the lecture notes give dh_T/dh_t = a_h^(T-t): 0.9^100
vanishes to 2.66e-5 and 1.1^100 explodes to 13781.
"""

from __future__ import annotations

import math
import re
from typing import Callable

import numpy as np
import torch
from torch import Tensor

_BLOCK_NAME = re.compile(r"^(?P<stack>.+)\.layer(?P<index>\d+)$")


def gradient_norms_through_time(
    model, inputs: Tensor, loss_fn: Callable[[Tensor], Tensor], layer: int = -1
) -> np.ndarray:
    """(T,) array: the L2 norm of dL/dh_t over batch and hidden units, for every step t of layer `layer`
    of the seqmodels.RNN `model` (its forward direction when bidirectional). `loss_fn` maps the RNN's
    output tensor to a scalar loss."""
    index = layer % model.num_layers
    with torch.enable_grad():
        output, _, trace = model(inputs, trace=True)
        loss = loss_fn(output)
        return gradient_norms_by_name({"layer": trace.hidden[f"l{index}"]}, loss)["layer"]


def gradients_of(loss: Tensor, groups: list[list[Tensor]]) -> list[list[Tensor | None]]:
    """dL/dx for every tensor of every group, from one backward pass (the graph is kept); None where
    the loss does not reach a tensor. The probe asks for its hidden states and its parameters at
    once: one pass, not one per panel."""
    flat = [tensor for group in groups for tensor in group]
    grads = torch.autograd.grad(loss, flat, allow_unused=True, retain_graph=True) if flat else ()
    split, start = [], 0
    for group in groups:
        split.append(list(grads[start:start + len(group)]))
        start += len(group)
    return split


def norms_of(grads: list[Tensor | None]) -> np.ndarray:
    """(N,) float64 array of L2 norms, 0 for a None gradient; one copy off the device for all."""
    present = next((g for g in grads if g is not None), None)
    if present is None:
        return np.zeros(len(grads))
    zero = present.new_zeros(())
    norms = [zero if g is None else torch.linalg.vector_norm(g.detach()) for g in grads]
    return torch.stack(norms).cpu().double().numpy()  # float64 models keep their precision


def hidden_groups(trace_hidden: dict[str, list[Tensor]], per_layer: bool) -> dict[str, list[Tensor]]:
    """The traced states the gradient panel shows: every step of every per-step list (recurrent
    models), or for Transformers (`per_layer`) the one (B, T, D) output of each block, bottom to
    top, encoder before decoder."""
    if not per_layer:
        return {name: steps for name, steps in trace_hidden.items() if steps}
    blocks = [name for name, steps in trace_hidden.items() if steps and _BLOCK_NAME.match(name)]
    return {name: trace_hidden[name][:1] for name in sorted(blocks, key=_depth_order)}


def gradient_norms_by_name(trace_hidden: dict[str, list[Tensor]], loss: Tensor) -> dict[str, np.ndarray]:
    """Trace name -> (T,) array of ||dL/dh_t||, for every per-step list of a seqmodels.Trace's `hidden`.
    A step the loss does not depend on (e.g. after the last one the loss reads) has norm 0."""
    groups = hidden_groups(trace_hidden, per_layer=False)
    grads = gradients_of(loss, list(groups.values()))
    return {name: norms_of(group) for name, group in zip(groups, grads)}


def gradient_norms_per_layer(
    trace_hidden: dict[str, list[Tensor]], loss: Tensor
) -> tuple[list[str], np.ndarray]:
    """For Transformer traces, whose hidden holds one (B, T, D) block output per "encoder.layer{k}" /
    "decoder.layer{k}": (names bottom to top, encoder before decoder; (N,) array of ||dL/d(output)||)."""
    groups = hidden_groups(trace_hidden, per_layer=True)
    grads = gradients_of(loss, list(groups.values()))
    return list(groups), norms_of([group[0] for group in grads])


def _depth_order(name: str) -> tuple[int, str, int]:
    match = _BLOCK_NAME.match(name)
    stack = match.group("stack")
    return ({"encoder": 0, "decoder": 1}.get(stack, 2), stack, int(match.group("index")))


# -- what the gradient-flow panel shows, Qt-free ---------------------------------------------------

LOG_FLOOR = 1e-30  # a logarithmic axis cannot show 0: norms are drawn no lower than this
HISTORY_ROWS = 200  # probe snapshots kept for the training step x time step heatmap
DEPTH = "blocks (depth)"  # a Transformer's history: its gradient norm per block, not per time step
PLAYGROUND_STEPS = 100  # the notes' example: a_h^100
PLAYGROUND_A_H = (0.5, 1.5, 1.1)  # lowest, highest and first a_h (1.1^100 = 13781 explodes)
CELL_TOKENS = 60  # tokens the cells are compared on: the probe text repeated to this length
CELL_HIDDEN = 32  # hidden size of the compared cells when the model has none of its own


def scalar_recurrence_gradient(a_h: float, steps: int = PLAYGROUND_STEPS, use_tanh: bool = False,
                               h0: float = 0.5, x: float = 0.0) -> np.ndarray:
    """dh_k/dh_0 for k = 0..steps of h_t = a_h h_{t-1} + x (or tanh of it): a_h^k when linear,
    times the product of tanh'(z_t) = 1 - h_t^2 otherwise (the notes' vanishing/exploding
    example)."""
    derivative, h = np.empty(steps + 1), h0
    derivative[0] = 1.0
    for t in range(1, steps + 1):
        z = a_h * h + x
        h = math.tanh(z) if use_tanh else z
        local = a_h * (1.0 - h * h) if use_tanh else a_h
        derivative[t] = derivative[t - 1] * local
    return derivative


def format_gradient(value: float) -> str:
    """As the notes print them: 1.1^100 = 13781, 0.9^100 = 0.0000266."""
    value = abs(value)
    if value >= 10:
        return f"{value:.0f}"
    if value >= 1e-7:
        return f"{value:.3g}" if value >= 1e-3 else f"{value:.7f}".rstrip("0")
    return f"{value:.3e}"


def cell_comparison_ids(tokenizer, text: str, length: int = CELL_TOKENS) -> list[int]:
    """The probe text's token ids repeated to `length` tokens: long enough for a plain RNN's
    gradient to fade. A text with no tokens (or none the tokenizer knows: a user's vocabulary
    without <unk>) falls back to two ordinary ids."""
    from explorer.errors import UserError

    try:
        ids = tokenizer.encode(text)
    except UserError:
        ids = []
    ids = ids or [5, 6]  # 0-4 are the reserved ids
    return (ids * (length // len(ids) + 1))[:length]


class GradientHistory:
    """log10 gradient norms of the last HISTORY_ROWS probes, per layer (recurrent models: per time
    step of each layer; Transformers: per block, under the name DEPTH). A probe of another shape
    (a new probe input) starts a new history."""

    def __init__(self, rows: int = HISTORY_ROWS) -> None:
        self.limit = rows
        self.clear()

    def clear(self) -> None:
        self.steps: list[int] = []
        self.rows: list[dict[str, np.ndarray]] = []  # per probe: name -> log10 norms
        self.labels: dict[str, list[str]] = {}  # name -> tick labels of its columns

    @staticmethod
    def series(snapshot) -> dict[str, tuple[np.ndarray, list[str]]]:
        """name -> (gradient norms, their labels) of one ProbeSnapshot."""
        if snapshot.grad_time:
            return {name: (norms, snapshot.grad_time_labels.get(name) or
                           [str(t) for t in range(len(norms))])
                    for name, norms in snapshot.grad_time.items()}
        if snapshot.grad_depth is not None and len(snapshot.grad_depth):
            return {DEPTH: (np.asarray(snapshot.grad_depth), depth_labels(snapshot))}
        return {}

    def add(self, snapshot) -> list[str]:
        """Record one probe; -> the names it holds (empty: nothing recorded)."""
        series = self.series(snapshot)
        if not series:
            return []
        row = {name: np.log10(np.maximum(norms, LOG_FLOOR)) for name, (norms, _) in series.items()}
        shapes = {name: values.shape for name, values in row.items()}
        if self.rows and {n: v.shape for n, v in self.rows[-1].items()} != shapes:
            self.steps, self.rows = [], []
        self.steps.append(snapshot.step)
        self.rows.append(row)
        del self.steps[:-self.limit], self.rows[:-self.limit]
        self.labels = {name: labels for name, (_, labels) in series.items()}
        return list(series)

    def matrix(self, name: str) -> np.ndarray | None:
        """(probes, time steps or blocks) of layer `name`, log10 of the gradient norm."""
        if not self.rows or name not in self.rows[-1]:
            return None
        return np.stack([row[name] for row in self.rows])


def depth_labels(snapshot) -> list[str]:
    """A Transformer's block names as short tick labels under an axis titled "layer (block)":
    "encoder.layer0" -> "encoder 1" (people count layers from 1)."""
    from explorer.analysis.labels import stack_layer_label

    return [stack_layer_label(label, short=True) for label in snapshot.grad_depth_labels]
