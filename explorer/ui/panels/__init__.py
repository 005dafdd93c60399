"""The panels of the app. Their registry (ids, classes as "module:Class", dock groups, tab names)
is plain data in explorer/panel_registry.py; this package holds the Qt panel modules and imports a
panel's class when the window or an export needs it."""

from __future__ import annotations

from explorer.panel_registry import (  # noqa: F401 - the registry, re-exported for the UI
    DOCK_GROUPS,
    EXPORT_ONLY_PANELS,
    PANELS,
    PanelEntry,
    export_ids,
    find_panel,
    panel_ids,
)


def _resolve(spec: str):
    import importlib

    module_name, name = spec.split(":")
    return getattr(importlib.import_module(module_name), name)


def panel_class(entry: PanelEntry):
    """Import the entry's panel class (its module imports pyqtgraph and torch)."""
    return _resolve(entry.spec)


def live_function(panel_id: str):
    """The Qt-free function (model, encoded, step) -> data that the panel's entry names as `live`,
    or None (a panel with no live data, or one the registry does not list)."""
    entry = find_panel(panel_id)
    return _resolve(entry.live) if entry is not None and entry.live else None
