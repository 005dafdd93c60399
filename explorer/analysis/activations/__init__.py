"""Named activation points under every analysis (docs/architecture.md, "Activation points").

Imported on first use, so that a plug-in registers its provider with the torch-free registry
(explorer/analysis/activations/registry.py) without importing torch.
"""

import importlib

_CORE = ("BaseProvider", "HookPoint", "Provider", "Run", "input_hook", "kind_of", "list_points",
         "output_hook", "provider_for", "recording", "removing", "replacing", "run_with",
         "set_attribute")
_LAZY = {**dict.fromkeys(_CORE, "explorer.analysis.activations.core"),
         "register_provider": "explorer.analysis.activations.registry"}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer.analysis.activations' has no attribute {name!r}")
