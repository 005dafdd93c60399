"""Analysis of what models compute: gradient flow through time and depth, positional encodings, probes.

Entries are imported lazily so that importing a torch-free module of this package (beam_layout) stays cheap.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "gradient_norms_through_time": "explorer.analysis.gradients",
    "gradient_norms_by_name": "explorer.analysis.gradients",
    "gradient_norms_per_layer": "explorer.analysis.gradients",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'explorer.analysis' has no attribute {name!r}")
