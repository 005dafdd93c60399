"""Sequence Model Explorer: train and open small sequence models and watch how they work.

Your own model from Python: `explorer.show(model, tokenizer)`, `explorer.Recorder(folder, ...)`
for your training loop, `explorer.Adapter(...)` to say what the model is (imported on first use,
so `import explorer` stays light).
"""

__version__ = "0.2.0"

# The package's composition root: the Hugging Face plug-in registers its families here (opened
# folders, and the architectures built from scratch, listed when transformers is installed), so
# no core package imports explorer.hf (tests/test_import_layers.py). Both modules are torch-free.
import explorer.hf.architectures  # noqa: E402,F401
import explorer.hf.families  # noqa: E402,F401
# Models the user wrote (explorer.show, --model FILE.py:build, Recorder runs): unlisted, torch-free
import explorer.usermodel.families  # noqa: E402,F401

_LAZY = {"Recorder": "explorer.recorder", "show": "explorer.usermodel.show",
         "Adapter": "explorer.usermodel.adapter"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
