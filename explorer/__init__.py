"""Sequence Model Explorer: train and open small sequence models and watch how they work.

Your own model from Python: `explorer.show(model, tokenizer)`, `explorer.Recorder(folder, ...)`
for your training loop, `explorer.Adapter(...)` to say what the model is (imported on first use,
so `import explorer` stays light).
"""

__version__ = "0.2.0"

_LAZY = {"Recorder": "explorer.recorder", "show": "explorer.usermodel.show",
         "Adapter": "explorer.usermodel.adapter"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
