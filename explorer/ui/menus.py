"""The menu bar and toolbar of the main window."""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu, QToolBar


def build_menus(window) -> None:
    a = window.actions
    bar = window.menuBar()

    file_menu = bar.addMenu("&File")
    file_menu.addAction(a.open)
    file_menu.addAction(a.open_checkpoint)
    file_menu.addAction(a.open_model_code)
    file_menu.addAction(a.open_lesson)
    file_menu.addAction(a.open_course)
    window.recent_menu = file_menu.addMenu("Open &recent")
    window.recent_menu.setToolTipsVisible(True)
    window.recent_menu.aboutToShow.connect(window.fill_recent_menu)
    file_menu.addAction(a.save_checkpoint)
    file_menu.addSeparator()
    export_menu = file_menu.addMenu("E&xport")
    export_menu.setToolTipsVisible(True)
    export_menu.aboutToShow.connect(partial(fill_export, export_menu, window))
    file_menu.addSeparator()
    file_menu.addAction(a.quit)

    model_menu = bar.addMenu("&Model")
    model_menu.addAction(a.new_model)
    presets = model_menu.addMenu("&Presets")
    presets.setToolTipsVisible(True)
    for preset in ("tiny", "small"):
        action = presets.addAction(f"New {preset} model…")
        action.setToolTip(f"The new-model dialog with the {preset} size preset")
        action.triggered.connect(partial(window.new_model, preset))
    model_menu.addAction(a.data)
    model_menu.addAction(a.summary)

    train_menu = bar.addMenu("&Train")
    for action in (a.train, a.pause, a.step, a.stop):
        train_menu.addAction(action)
    train_menu.addSeparator()
    train_menu.addAction(a.resume)
    train_menu.addAction(a.save_checkpoint)
    train_menu.addAction(a.autosave)

    view_menu = bar.addMenu("&View")
    for dock in window.docks.values():
        view_menu.addAction(dock.toggleViewAction())
    view_menu.addAction(window.controls_dock.toggleViewAction())
    view_menu.addAction(window.runs.dock.toggleViewAction())
    view_menu.addAction(a.previous_snapshot)
    view_menu.addAction(a.next_snapshot)
    view_menu.addSeparator()
    view_menu.addAction(a.presentation)
    view_menu.addAction(a.reset_layout)

    help_menu = bar.addMenu("&Help")
    help_menu.addAction(a.shortcuts)
    help_menu.addAction(a.about)
    for menu in (file_menu, model_menu, train_menu, view_menu, help_menu):
        menu.setToolTipsVisible(True)

    toolbar = QToolBar("Main toolbar", window)
    toolbar.setObjectName("main_toolbar")
    toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)  # names are in tooltips
    for action in (a.open, a.save_checkpoint, a.new_model, a.data, None,
                   a.train, a.pause, a.step, a.stop):
        if action is None:
            toolbar.addSeparator()
        else:
            toolbar.addAction(action)
    window.addToolBar(toolbar)
    window.toolbar = toolbar


def fill_export(menu: QMenu, window) -> None:
    """One entry per panel (panels are built after the first paint), then Export all."""
    menu.clear()
    for panel_id, panel in window.panels.items():
        action = menu.addAction(f"{panel.TITLE}…")
        action.setObjectName(f"action_export_{panel_id}")
        action.setToolTip(f"Export the {panel.TITLE} panel as PNG, SVG and CSV")
        action.triggered.connect(partial(window.export_panels, [panel_id]))
    menu.addSeparator()
    menu.addAction(window.actions.export_all)


def fill_recent(menu: QMenu, paths: list[str], open_path) -> None:
    menu.clear()
    if not paths:
        menu.addAction("(none)").setEnabled(False)
    for path in paths:
        action = menu.addAction(path)
        action.setToolTip(f"Open {path}")
        action.triggered.connect(partial(open_path, path))
