"""The window `explorer.show` opens: one per process, reused by every later call.

A script blocks in the Qt event loop until the window closes; under IPython's `%gui qt` the loop
already runs, so the call returns with the window open. A later call while it is open puts the new
workspace into it (the controller's set_workspace: panels redraw, the probe input resets to the
new data's first example).
"""

from __future__ import annotations

from explorer.ui.app import create_application

_window = None  # the open window, if any


def new_window():
    from explorer.ui.main_window import MainWindow

    return MainWindow(load_demo=False)


def show_workspace(workspace, block: bool = True):
    global _window
    app = create_application()
    window = _window
    if window is not None and window.isVisible():
        if window.panels:  # started up: the startup model is in
            window.controller.set_workspace(workspace)
        else:  # not painted yet: the startup picks it up
            window.startup_model = workspace
        window.raise_()
        return window
    window = new_window()
    window.startup_model = workspace
    window.show()
    _window = window
    if block:
        app.exec()
        _window = None
    return window
