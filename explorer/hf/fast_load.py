"""`from_pretrained` without initialising the weights it is about to overwrite.

transformers builds the model on the meta device and then loads the folder's weights into it, but
the constructors still call torch.nn.init (GPT-2's Conv1D, nn.Linear's reset_parameters), and on
meta tensors those calls go through torch's Python reference implementations: for a GPT-2-small-
sized model, 37 of the 109 ms of CPU a `from_pretrained` takes, for values nobody reads. Here those
calls do nothing while the model is built and loaded. transformers' own initialisation of what the
folder does not hold (its `_init_weights`, through `transformers.initialization`) keeps the real
functions; and should any weight still be missing, the model is loaded again the ordinary way.

Only meta tensors are skipped (explorer.shapes.skipping_init): a model built with real weights
meanwhile, in another thread, is initialised as ever.
"""

from __future__ import annotations

from explorer.shapes import skipping_init


def from_pretrained(auto_class, folder: str, **kwargs):
    """`auto_class.from_pretrained(folder, **kwargs)`, the same model, built faster when the folder
    holds every weight (a missing one is loaded again with its real initialisation)."""
    with skipping_init():
        model, info = auto_class.from_pretrained(folder, output_loading_info=True, **kwargs)
    if not info.get("missing_keys"):
        return model
    return auto_class.from_pretrained(folder, **kwargs)
