"""Mean ablation's values: each head's output and each RNN unit's state averaged over the
validation data (teacher-forced on the references, every position counted), as Michel et al.
(2019) and the mean-ablation literature do, rather than over the one probe.

Computed once per model and weights (an optimizer step or a loaded snapshot writes the weights in
place, which bumps their version counters) and cached, so the ablation panel's clicks and every
head of an importance run reuse one pass over the data. Called from the job runner's thread.

    means = validation_means(workspace)               # {point: (H, Dh) or (units,)}
    ablate(model, item, heads={point: [2]}, mode="mean", means=means)
"""

from __future__ import annotations

import threading
import weakref

import torch

from explorer.analysis.activations import list_points
from explorer.analysis.examples import examples_of
from explorer.analysis.interventions import _HEADS, UNIT_KIND, head_means
from explorer.errors import UserError
from explorer.families import family_of

EXAMPLES = 32  # validation examples the means are taken over
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> (key, means)
_LOCK = threading.Lock()


def ablatable_points(model, inputs: tuple) -> list[str]:
    """The points ablation replaces: every attention head output (z) and RNN hidden state (h)."""
    return [p.name for p in list_points(model, inputs) if _HEADS.match(p.name) or p.kind == UNIT_KIND]


def _weights_key(model, examples: int) -> tuple:
    """Equal while no weight was written: a tensor's version counter moves on every in-place write."""
    parameters = list(model.parameters())
    return (tuple(p._version for p in parameters), str(parameters[0].device), examples)


def validation_means(workspace, examples: int = EXAMPLES) -> dict[str, torch.Tensor]:
    """{point: its mean over the first `examples` validation examples} for every ablatable point;
    one line (UserError) when the model has no validation data loaded."""
    if examples < 1:
        raise UserError(f"at least one validation example is needed (got {examples})")
    model = workspace.model
    key = _weights_key(model, examples)
    with _LOCK:
        cached = _CACHE.get(model)
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        pairs = examples_of(workspace, "val")[:examples]
    except UserError:
        raise UserError("mean ablation averages over the validation data, and this model has none "
                        "loaded: open a data file, or ablate with zero") from None
    encode = family_of(model).encode_probe  # as the probe encodes: truncated to the model's length
    items = [encode(workspace, source, target) for source, target in pairs]
    device = next(model.parameters()).device
    names = ablatable_points(model, tuple(t.to(device) for t in items[0].inputs))
    means = head_means(model, items, names)
    with _LOCK:
        _CACHE[model] = (key, means)
    return means
