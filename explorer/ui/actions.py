"""Every QAction of the main window, with its shortcut and tooltip, in one place."""

from __future__ import annotations

from types import SimpleNamespace

from PySide6.QtGui import QAction, QKeySequence

# name -> (text, shortcut, standard icon name or None, tooltip)
ACTIONS = {
    "open": (
        "&Open…", "Ctrl+O", "document-open",
        "Open a text or parallel corpus, or a checkpoint folder",
    ),
    "open_checkpoint": (
        "Open &checkpoint…", "Ctrl+Shift+O", None,
        "Open a checkpoint folder",
    ),
    "open_model_code": (
        "Open &model code…", "Ctrl+Shift+M", None,
        "Open your own PyTorch model: a Python file whose build() returns it (the file is imported)",
    ),
    "save_checkpoint": (
        "&Save checkpoint…", "Ctrl+S", "document-save",
        "Save the model, tokenizers, optimiser and history",
    ),
    "export_all": (
        "Export &all…", "Ctrl+E", None,
        "Export every panel as PNG, SVG and CSV into one folder",
    ),
    "open_lesson": (
        "Open &lesson…", "Ctrl+L", None,
        "Open a lesson (a Markdown file): its model, panels and steps, with checks on your model",
    ),
    "open_course": (
        "Open c&ourse…", "Ctrl+Shift+L", None,
        "Open a course (a folder of lessons): every lesson listed with your progress, the first one opened",
    ),
    "presentation": (
        "&Presentation", "F11", None,
        "One panel (or the lesson step) full screen, fonts and lines ×2 (Ctrl+= / Ctrl+- to zoom), "
        "high-contrast colours; F11 again restores the layout",
    ),
    "quit": (
        "&Quit", "Ctrl+Q", None,
        "Stop training and close the app",
    ),
    "new_model": (
        "&New model…", "Ctrl+N", "document-new",
        "Choose an architecture, cell, attention and size, then build it",
    ),
    "data": (
        "&Data…", "Ctrl+D", None,
        "Pick a built-in task or open files; preview pairs, tokens and vocabulary",
    ),
    "summary": (
        "Model &summary", "Ctrl+I", None,
        "The model's configuration and parameter count",
    ),
    "train": (
        "&Train", "Ctrl+T", "media-playback-start",
        "Train the model in the background (resumes when paused)",
    ),
    "pause": (
        "&Pause", "Space", "media-playback-pause",
        "Pause or resume training between two steps",
    ),
    "step": (
        "S&tep", "Ctrl+Right", "media-skip-forward",
        "Run exactly one optimisation step",
    ),
    "stop": (
        "St&op", "Ctrl+.", "media-playback-stop",
        "Stop training after the current step; nothing trained is lost",
    ),
    "resume": (
        "&Resume from checkpoint…", "Ctrl+R", None,
        "Open a checkpoint and continue training it",
    ),
    "previous_snapshot": (
        "&Previous snapshot", "Alt+Left", None,
        "Show the run's previous snapshot on the timeline",
    ),
    "next_snapshot": (
        "&Next snapshot", "Alt+Right", None,
        "Show the run's next snapshot on the timeline",
    ),
    "autosave": (
        "&Autosave and runs…", "Ctrl+,", None,
        "How often a running training is saved, snapshot cadence, how many runs are kept",
    ),
    "reset_layout": (
        "&Reset layout", None, None,
        "Put every panel back where it started",
    ),
    "about": (
        "&About", None, None,
        "About Sequence Model Explorer",
    ),
    "shortcuts": (
        "&Keyboard shortcuts", "F1", None,
        "Every keyboard shortcut of the app",
    ),
}


# Qt's own icons for the toolbar where the desktop has no icon theme (Windows, macOS, bare X11)
STANDARD_ICONS = {
    "open": "SP_DialogOpenButton",
    "open_checkpoint": "SP_DirOpenIcon",
    "save_checkpoint": "SP_DialogSaveButton",
    "new_model": "SP_FileIcon",
    "data": "SP_FileDialogDetailedView",
    "train": "SP_MediaPlay",
    "pause": "SP_MediaPause",
    "step": "SP_MediaSkipForward",
    "stop": "SP_MediaStop",
}


def build_actions(window) -> SimpleNamespace:
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QStyle

    actions = {}
    for name, (text, shortcut, icon, tooltip) in ACTIONS.items():
        action = QAction(text, window)
        action.setObjectName(f"action_{name}")
        keys = ""
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            keys = QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)
        plain = text.replace("&", "").rstrip("…")
        # the toolbar shows icons only: its tooltip names the action, then says what it does
        action.setToolTip(f"{plain} ({keys}): {tooltip}" if keys else f"{plain}: {tooltip}")
        action.setStatusTip(tooltip)
        if icon and QIcon.hasThemeIcon(icon):
            action.setIcon(QIcon.fromTheme(icon))
        elif name in STANDARD_ICONS:
            pixmap = getattr(QStyle.StandardPixmap, STANDARD_ICONS[name])
            action.setIcon(window.style().standardIcon(pixmap))
        actions[name] = action
    actions["pause"].setCheckable(True)
    actions["quit"].setShortcut(QKeySequence(QKeySequence.StandardKey.Quit))
    return SimpleNamespace(**actions)


def shortcut_rows() -> list[tuple[str, str]]:
    """(action, keys) for the keyboard-shortcuts dialog."""
    return [
        (text.replace("&", "").rstrip("…"), shortcut)
        for text, shortcut, _, _ in ACTIONS.values()
        if shortcut
    ]
