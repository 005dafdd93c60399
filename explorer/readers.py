"""One model, many readers: the trainer writes the weights in its thread while decoders and
probes read them in others (the job runner's, the GUI's).

Two locks per model, always taken in this order:
- `mode`: whoever switches the model's train/eval flags holds it until it switches them back (the
  trainer's step and evaluation, a probe, a decode), so no one else runs a forward pass with
  dropout turned on, or trains with it turned off;
- `weights`: whoever writes the weights (the trainer's step) or must see them whole (a reader of
  the shared model, `frozen_copy`) holds it, so no one sees half an optimizer step.

`reading(model)` takes both for a reader of the shared model; `frozen_copy(model)` waits for at
most one training step (not an evaluation) and gives a private eval-mode copy that a long, step by
step decode can use while training goes on.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import weakref
from dataclasses import dataclass, field


@dataclass
class ModelLocks:
    mode: threading.RLock = field(default_factory=threading.RLock)
    weights: threading.RLock = field(default_factory=threading.RLock)


_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def locks_of(model) -> ModelLocks:
    with _LOCKS_GUARD:
        locks = _LOCKS.get(model)
        if locks is None:
            locks = _LOCKS[model] = ModelLocks()
        return locks


@contextlib.contextmanager
def reading(model):
    """Read the shared model: whole weights, eval mode (no dropout) for the duration; its training
    flag is restored afterwards. Reentrant in one thread (a probe inside a decode)."""
    locks = locks_of(model)
    with locks.mode, locks.weights:
        was_training = model.training
        if was_training:  # Module.train() walks every submodule: only pay for it when needed
            model.eval()
        try:
            yield model
        finally:
            if was_training:
                model.train()


@contextlib.contextmanager
def writing(model):
    """The trainer's step: nobody reads the weights or switches the mode meanwhile."""
    locks = locks_of(model)
    with locks.mode, locks.weights:
        yield model


@contextlib.contextmanager
def switching_mode(model):
    """Work in the trainer's own thread that switches the mode but writes no weights (evaluation):
    readers of the shared model wait, copies (`frozen_copy`) need not."""
    with locks_of(model).mode:
        yield model


def frozen_copy(model):
    """A private copy of the model's current weights, in eval mode, without gradients."""
    with locks_of(model).weights:
        twin = copy.deepcopy(model)
    twin.eval()
    twin.requires_grad_(False)
    return twin
