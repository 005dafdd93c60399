"""The activation providers' registry, torch-free so that a plug-in registers its provider when it
is loaded (before any torch import): the layer above registers with this one, never the reverse.

Order of the search: the providers registered by hand (newest first), the built-in one for our
models, the plug-ins' (each only once its models' package is imported: none of its models can exist
before, and importing transformers for a model of ours cost seconds and, in a probe's worker thread,
raced the GUI thread's own import), then the catch-alls (plain torch modules last).
"""

from __future__ import annotations

import importlib
import sys
import threading

from explorer.families import load_plugins

_PROVIDERS: list = []  # registered by hand, newest first
_FALLBACKS: list = []  # tried after the built-ins (catch-alls such as plain torch modules)
# ("module:ATTRIBUTE", the package whose models it reads or None): imported on first use
_BUILTIN = ["explorer.analysis.activations.providers.ours:PROVIDER"]
_PLUGINS: list[tuple[str, str | None]] = []
_LAST = ["explorer.analysis.activations.providers.torch_modules:PROVIDER"]
_resolved: dict[str, object] = {}
_RESOLVING = threading.Lock()


def register_provider(provider, last: bool = False) -> None:
    """Add a provider: tried before the built-in ones, or after them with last=True (a catch-all)."""
    if last:
        _FALLBACKS.append(provider)
    else:
        _PROVIDERS.insert(0, provider)


def register_plugin_provider(target: str, package: str | None = None) -> None:
    """A plug-in's provider "module:ATTRIBUTE", tried after ours and imported once `package` is."""
    if (target, package) not in _PLUGINS:
        _PLUGINS.append((target, package))


def _resolve(target: str):
    with _RESOLVING:
        if target not in _resolved:
            module, _, attribute = target.partition(":")
            _resolved[target] = getattr(importlib.import_module(module), attribute)
    return _resolved[target]


def providers() -> list:
    """Every provider to try, in order (a plug-in's only once its package is imported)."""
    load_plugins()
    plugins = [target for target, package in _PLUGINS if package is None or package in sys.modules]
    return [*_PROVIDERS, *map(_resolve, [*_BUILTIN, *plugins, *_LAST]), *_FALLBACKS]
