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


def panel_class(entry: PanelEntry):
    """Import the entry's panel class (its module imports pyqtgraph and torch)."""
    import importlib

    module_name, class_name = entry.spec.split(":")
    return getattr(importlib.import_module(module_name), class_name)
