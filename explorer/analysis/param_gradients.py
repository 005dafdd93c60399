"""Gradient norm per layer of a model's parameters: ||dL/dθ_layer||, the L2 norm over every
parameter of one layer, for the gradient-flow panel. Qt-free.

Works on any PyTorch model by its parameter names: a name with a numbered part ("h.3.", "layers.0.",
"block.1.", or nn.RNN's "_l1") belongs to that layer of its stack (encoder or decoder when the name
says so); the token and position embeddings come first, and the rest (final norms, output head,
attention glue of an RNN) last. Like the probe's other gradients it uses `torch.autograd.grad`, so
the parameters' `.grad` (the trainer's) is never touched.
"""

from __future__ import annotations

import re

import numpy as np
import torch

EMBEDDINGS = "embeddings"
OTHER = "output & other"
_NUMBERED = re.compile(r"\.(\d+)\.|_l(\d+)(?:_reverse)?$")
_EMBEDDING_WORDS = ("emb", "wte", "wpe", "shared")


def layer_group(name: str) -> str:
    """The group of one parameter: "embeddings", "encoder.layer0", "decoder.layer2", "layer1"
    (a one-stack model) or "output & other"."""
    match = _NUMBERED.search(name)
    if match is None:
        return EMBEDDINGS if any(w in name.lower() for w in _EMBEDDING_WORDS) else OTHER
    index = int(match.group(1) or match.group(2))
    before = name[: match.start()].lower()
    stack = "decoder" if "decoder" in before else "encoder" if "encoder" in before else ""
    return f"{stack}.layer{index}" if stack else f"layer{index}"


def _order(group: str) -> tuple[int, int]:
    if group == EMBEDDINGS:
        return 0, 0
    if group == OTHER:
        return 4, 0
    stack, _, index = group.rpartition("layer")
    return {"encoder.": 1, "": 2, "decoder.": 3}[stack], int(index)


def trainable_parameters(model) -> list[tuple[str, torch.Tensor]]:
    """(name, parameter) of every parameter that learns; frozen ones (Marian's sinusoid) are out."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def parameter_gradient_norms(model, loss: torch.Tensor) -> tuple[list[str], np.ndarray]:
    """(groups in depth order, (G,) array of ||dL/dθ|| over each group's parameters). A parameter
    the loss does not reach counts 0; frozen ones (Marian's sinusoid) are left out."""
    named = trainable_parameters(model)
    if not named:
        return [], np.zeros(0)
    grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True, retain_graph=True)
    return group_norms([name for name, _ in named], grads)


def group_norms(names: list[str], grads) -> tuple[list[str], np.ndarray]:
    """`parameter_gradient_norms` from the gradients of the parameters called `names`."""
    device = next((g.device for g in grads if g is not None), None)
    squares = np.zeros(len(names)) if device is None else torch.stack([
        torch.zeros((), dtype=torch.float64, device=device) if g is None
        else g.detach().double().pow(2).sum() for g in grads]).cpu().numpy()
    by_group: dict[str, float] = {}
    for name, value in zip(names, squares):  # one copy off the device, not one per tensor
        group = layer_group(name)
        by_group[group] = by_group.get(group, 0.0) + float(value)
    groups = sorted(by_group, key=_order)
    return groups, np.sqrt(np.array([by_group[g] for g in groups], dtype=np.float64))


def group_label(group: str) -> str:
    """"encoder.layer0" -> "encoder 1", "layer1" -> "layer 2"; the other groups as they are."""
    from explorer.analysis.labels import stack_layer_label

    return group if group in (EMBEDDINGS, OTHER) else stack_layer_label(group, short=True)
