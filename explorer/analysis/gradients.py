"""Gradient flow: ||dL/dh_t|| through time for recurrent layers, ||dL/d(block output)|| through depth.

All gradients come from `torch.autograd.grad` on the hidden states a trace hands out, so they are
total derivatives (every path from h_t to the loss) and the parameters' `.grad` is never touched.
For a one-unit tanh RNN in its linear regime the lecture notes give dh_T/dh_t = a_h^(T-t): 0.9^100
vanishes to 2.66e-5 and 1.1^100 explodes to 13781.
"""

from __future__ import annotations

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
    of the models.RNN `model` (its forward direction when bidirectional). `loss_fn` maps the RNN's
    output tensor to a scalar loss."""
    index = layer % model.num_layers
    with torch.enable_grad():
        output, _, trace = model(inputs, trace=True)
        loss = loss_fn(output)
        return gradient_norms_by_name({"layer": trace.hidden[f"l{index}"]}, loss)["layer"]


def gradient_norms_by_name(trace_hidden: dict[str, list[Tensor]], loss: Tensor) -> dict[str, np.ndarray]:
    """Trace name -> (T,) array of ||dL/dh_t||, for every per-step list of a models.Trace's `hidden`.
    A step the loss does not depend on (e.g. after the last one the loss reads) has norm 0."""
    names = [name for name, steps in trace_hidden.items() if steps]
    flat = [h for name in names for h in trace_hidden[name]]
    if not flat:
        return {}
    grads = torch.autograd.grad(loss, flat, allow_unused=True, retain_graph=True)
    norms, start = {}, 0
    for name in names:
        count = len(trace_hidden[name])
        norms[name] = np.array(
            [0.0 if g is None else float(torch.linalg.vector_norm(g)) for g in grads[start:start + count]],
            dtype=np.float64,
        )
        start += count
    return norms


def gradient_norms_per_layer(
    trace_hidden: dict[str, list[Tensor]], loss: Tensor
) -> tuple[list[str], np.ndarray]:
    """For Transformer traces, whose hidden holds one (B, T, D) block output per "encoder.layer{k}" /
    "decoder.layer{k}": (names bottom to top, encoder before decoder; (N,) array of ||dL/d(output)||)."""
    blocks = {name: steps for name, steps in trace_hidden.items() if steps and _BLOCK_NAME.match(name)}
    names = sorted(blocks, key=_depth_order)
    by_name = gradient_norms_by_name({name: blocks[name][:1] for name in names}, loss)
    return names, np.array([by_name[name][0] for name in names], dtype=np.float64)


def _depth_order(name: str) -> tuple[int, str, int]:
    match = _BLOCK_NAME.match(name)
    stack = match.group("stack")
    return ({"encoder": 0, "decoder": 1}.get(stack, 2), stack, int(match.group("index")))
