"""The main window's docks: one per registered panel (explorer.ui.panels.PANELS), placed by its
dock group. The docks exist from the start; the panels move into them after the first paint."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow

from explorer.ui.panels import PANELS

CONTROLS_WIDTH = 250  # pixels for the training controls in the default layout


def create_docks(window: QMainWindow) -> dict[str, QDockWidget]:
    """One dock per panel, named by its id, holding a placeholder until the panel is built."""
    docks = {}
    for entry in PANELS:
        dock = QDockWidget(entry.panel_id.capitalize(), window)
        dock.setObjectName(entry.panel_id)
        placeholder = QLabel("Loading…")
        placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        dock.setWidget(placeholder)
        docks[entry.panel_id] = dock
    return docks


def group_docks(docks: dict[str, QDockWidget]) -> dict[str, list[QDockWidget]]:
    groups: dict[str, list[QDockWidget]] = {}
    for entry in PANELS:
        groups.setdefault(entry.group, []).append(docks[entry.panel_id])
    return groups


def arrange_default_layout(window: QMainWindow, controls: QDockWidget,
                           docks: dict[str, QDockWidget]) -> None:
    """Training controls at the far left, the training group beside them one above the other,
    and on the right the inspect group tabbed above the decoding group, tabbed too."""
    left, right = Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.RightDockWidgetArea
    groups = group_docks(docks)
    window.addDockWidget(left, controls)
    above = controls
    for i, dock in enumerate(groups.get("training", [])):
        orientation = Qt.Orientation.Horizontal if i == 0 else Qt.Orientation.Vertical
        window.splitDockWidget(above, dock, orientation)
        above = dock
    first_of: dict[str, QDockWidget] = {}
    for name in ("inspect", "decoding"):
        members = groups.get(name, [])
        if not members:
            continue
        if name == "decoding" and "inspect" in first_of:
            window.splitDockWidget(first_of["inspect"], members[0], Qt.Orientation.Vertical)
        else:
            window.addDockWidget(right, members[0])
        for dock in members[1:]:
            window.tabifyDockWidget(members[0], dock)
        members[0].raise_()
        first_of[name] = members[0]
    for name, members in groups.items():  # a group the default layout does not know yet
        if name not in ("training", "inspect", "decoding"):
            for dock in members:
                window.addDockWidget(right, dock)


def apply_default_sizes(window: QMainWindow, controls: QDockWidget,
                        docks: dict[str, QDockWidget]) -> None:
    """Proportions of the default layout for the window's current size: training 45% and the
    right-hand groups 55% of the width; the two right-hand groups half the height each."""
    width, height = window.width(), window.height()
    groups = group_docks(docks)
    training, inspect, decoding = (groups.get(n, []) for n in ("training", "inspect", "decoding"))
    rest = width - CONTROLS_WIDTH
    if training and inspect:
        window.resizeDocks([controls, training[0], inspect[0]],
                           [CONTROLS_WIDTH, rest * 45 // 100, rest * 55 // 100],
                           Qt.Orientation.Horizontal)
    if inspect and decoding:
        window.resizeDocks([inspect[0], decoding[0]], [height // 2, height // 2],
                           Qt.Orientation.Vertical)
    if len(training) >= 2:
        window.resizeDocks(training[:2], [height * 55 // 100, height * 45 // 100],
                           Qt.Orientation.Vertical)
