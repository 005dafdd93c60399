"""The model side of the family registry: for each family, its config class, size presets and
how to build it.

A family's module in seqmodels/ declares `MODEL_FAMILIES = (ModelFamily(...), ...)` next to its model
class; the registry finds those modules itself (it imports every module of the package once, on
first use), so a new family in seqmodels/ is one new file. A family whose model lives elsewhere (the
app's Hugging Face wrappers) calls `register_model_family` instead. What the app does with a family
(loss, batches, probes, decoding, flags) is the explorer side: `explorer.families`.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class ModelFamily:
    name: str  # the config's `family` value, e.g. "gpt"
    config_class: type  # a dataclass with a `family` field (and optionally a validate() method)
    build: Callable[[Any], Any]  # config -> torch.nn.Module (usually the model class itself)
    # preset name -> config values; vocabulary sizes come from the data, not from presets
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


_REGISTERED: dict[str, ModelFamily] = {}
_DISCOVERY_LOCK = threading.RLock()  # the GUI and a worker thread may both ask first
_discovered = False
# callables that import modules outside seqmodels/ calling register_model_family (the app's
# plug-ins), registered by the layer above and run once with the discovery
_LOADERS: list[Callable[[], None]] = []


def register_loader(load: Callable[[], None]) -> None:
    """Run `load` with the discovery (or before the next lookup, when discovery has run)."""
    global _discovered
    with _DISCOVERY_LOCK:
        _LOADERS.append(load)
        _discovered = False


def register_model_family(family: ModelFamily) -> None:
    """Add (or replace) a family; seqmodels/ modules declare MODEL_FAMILIES instead."""
    _REGISTERED[family.name] = family


def _discover() -> None:
    """Register the MODEL_FAMILIES of every module in seqmodels/, once."""
    global _discovered
    if _discovered:  # the common case, without the lock
        return
    with _DISCOVERY_LOCK:
        if _discovered:
            return
        while _LOADERS:  # theirs count as registered by hand: they come after seqmodels/'s own
            _LOADERS.pop(0)()
        package = importlib.import_module("seqmodels")
        found: dict[str, ModelFamily] = {}
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            module = importlib.import_module(f"seqmodels.{info.name}")
            found.update((family.name, family) for family in getattr(module, "MODEL_FAMILIES", ()))
        registered_by_hand = dict(_REGISTERED)  # before discovery: they come after seqmodels/'s own
        _REGISTERED.clear()
        _REGISTERED.update({**found, **registered_by_hand})
        _discovered = True


def model_families() -> dict[str, ModelFamily]:
    """Every registered family by name, seqmodels/ modules in file-name order, then any added later."""
    _discover()
    return dict(_REGISTERED)


def model_family(name: str) -> ModelFamily:
    """The family called `name`; ValueError naming the choices otherwise."""
    families = model_families()
    if name not in families:
        raise ValueError(f"unknown model family {name!r}; choose one of {', '.join(families)}")
    return families[name]


def preset_names() -> tuple[str, ...]:
    """Every preset some family has, in the order they first appear ("tiny", "small")."""
    names: dict[str, None] = {}
    for family in model_families().values():
        names.update(dict.fromkeys(family.presets))
    return tuple(names)
