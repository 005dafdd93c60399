"""`from_pretrained` without initialising the weights it is about to overwrite.

transformers builds the model on the meta device and then loads the folder's weights into it, but
the constructors still call torch.nn.init (GPT-2's Conv1D, nn.Linear's reset_parameters), and on
meta tensors those calls go through torch's Python reference implementations: for a GPT-2-small-
sized model, 37 of the 109 ms of CPU a `from_pretrained` takes, for values nobody reads. Here those
calls do nothing while the model is built and loaded. transformers' own initialisation of what the
folder does not hold (its `_init_weights`, through `transformers.initialization`) keeps the real
functions; and should any weight still be missing, the model is loaded again the ordinary way.

Like transformers' own `guard_torch_init_functions`, this swaps module attributes for the time of
the call: a module built in another thread meanwhile would skip its initialisation too. The app
opens models in its one job runner, which builds nothing else at the same time.
"""

from __future__ import annotations

import contextlib
import sys


@contextlib.contextmanager
def skipping_torch_init():
    """torch.nn.init's functions (and their copies in torch.nn.modules.*) return their tensor
    untouched for the duration."""
    from transformers.initialization import TORCH_INIT_FUNCTIONS, TORCH_MODULES_TO_PATCH

    def untouched(tensor, *args, **kwargs):
        return tensor

    swapped = []
    for module_name in TORCH_MODULES_TO_PATCH:
        module = sys.modules.get(module_name)
        for function_name in TORCH_INIT_FUNCTIONS if module is not None else ():
            if hasattr(module, function_name):
                swapped.append((module, function_name, getattr(module, function_name)))
                setattr(module, function_name, untouched)
    try:
        yield
    finally:
        for module, function_name, function in swapped:
            setattr(module, function_name, function)


def from_pretrained(auto_class, folder: str, **kwargs):
    """`auto_class.from_pretrained(folder, **kwargs)`, the same model, built faster when the folder
    holds every weight (a missing one is loaded again with its real initialisation)."""
    with skipping_torch_init():
        model, info = auto_class.from_pretrained(folder, output_loading_info=True, **kwargs)
    if not info.get("missing_keys"):
        return model
    return auto_class.from_pretrained(folder, **kwargs)
