"""Models built for their shapes, not their values: torch.nn.init's functions do nothing meanwhile.

On torch's meta device an initialiser has no values to write, yet `normal_` and its kin run
through torch's Python reference implementations, whose first use imports torch._dynamo: 2.8 s of
every `explorer score` or `decode` went to checking a checkpoint's shapes that way. With the
initialisers skipped the same shapes come out (tests/test_shapes.py). Opening a Hugging Face
folder skips them too while transformers builds the model it then fills (explorer.hf.fast_load).

The functions are swapped for the time of the block, in torch.nn.init and wherever torch.nn's
modules imported them by name (as transformers' own loading does), for ones that skip only meta
tensors: a model built with real weights meanwhile, in this thread or another, is initialised as
ever.
"""

from __future__ import annotations

import contextlib
import sys


def _initialisers() -> dict[str, object]:
    import torch.nn.init as init

    return {name: getattr(init, name) for name in dir(init)
            if name.endswith("_") and not name.startswith("_") and callable(getattr(init, name))}


@contextlib.contextmanager
def skipping_init():
    """torch.nn.init's in-place initialisers leave meta tensors untouched for the duration."""
    def skipping_meta(function):
        def initialise(tensor, *args, **kwargs):
            return tensor if tensor.is_meta else function(tensor, *args, **kwargs)
        return initialise

    initialisers = _initialisers()
    modules = [module for name, module in list(sys.modules.items()) if module is not None
               and (name == "torch.nn.init" or name.startswith("torch.nn.modules"))]
    swapped = []
    for module in modules:
        for name, function in initialisers.items():
            if getattr(module, name, None) is function:
                swapped.append((module, name, function))
                setattr(module, name, skipping_meta(function))
    try:
        yield
    finally:
        for module, name, function in swapped:
            setattr(module, name, function)


@contextlib.contextmanager
def shapes_only():
    """Build models on the meta device (no memory) without initialising them."""
    import torch

    with torch.device("meta"), skipping_init():
        yield
