"""Sequence Model Explorer: train and open small sequence models and watch how they work.

Your own model from Python: `explorer.show(model, tokenizer)`, `explorer.Recorder(folder, ...)`
for your training loop, `explorer.Adapter(...)` to say what the model is (imported on first use,
so `import explorer` stays light).
"""

__version__ = "0.2.0"

# The package's composition root: it hands the registries a loader for the plug-ins (the Hugging
# Face families, opened folders and the architectures built from scratch, listed when transformers
# is installed; the families of models the user wrote: explorer.show, --model FILE.py:build,
# Recorder runs), run on their first lookup, so no core package names explorer.hf
# (tests/test_import_layers.py) and `import explorer` loads no plug-in until a family is asked for.
import explorer.families as _families  # noqa: E402 - both registries are torch-free at import
import seqmodels.families as _model_families  # noqa: E402


def _load_plugins() -> None:
    import explorer.hf.architectures  # noqa: F401 - each registers its families
    import explorer.hf.families  # noqa: F401
    import explorer.usermodel.families  # noqa: F401


_families.register_loader(_load_plugins)
_model_families.register_loader(_families.load_plugins)

_LAZY = {"Recorder": "explorer.recorder", "show": "explorer.ui.show_window",
         "Adapter": "explorer.usermodel.adapter"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer' has no attribute {name!r}")
