"""`make_main_window`: the real main window with settings in tmp_path, closed after the test, which
then checks that no worker thread is left running and no top-level widget leaked. `count_events`:
how many events of one type reach a widget."""

from __future__ import annotations

import gc

import pytest
import shiboken6
from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QObject,
    QSettings,
    QStandardPaths,
    QThread,
)
from PySide6.QtWidgets import QApplication, QDialog, QDockWidget, QMainWindow


@pytest.fixture
def isolated_settings(tmp_path, qapp):
    """Nothing a test does may reach the user's settings."""
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "user"))
    QStandardPaths.setTestModeEnabled(True)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("runs/data_dir", str(tmp_path / "data"))  # the window's runs go here
    return settings


class _EventCounter(QObject):
    def __init__(self, kind: QEvent.Type) -> None:
        super().__init__()
        self.kind, self.count = kind, 0

    def eventFilter(self, obj, event) -> bool:
        if event.type() == self.kind:
            self.count += 1
        return False


@pytest.fixture
def count_events():
    """count_events(widget, QEvent.Type.Paint) -> a counter whose `count` grows with each such
    event `widget` receives (set it back to 0 to start again)."""
    watched = []

    def watch(widget, kind: QEvent.Type) -> _EventCounter:
        counter = _EventCounter(kind)
        widget.installEventFilter(counter)
        watched.append((widget, counter))
        return counter

    yield watch
    for widget, counter in watched:
        if shiboken6.isValid(widget):
            widget.removeEventFilter(counter)


def _flush_deletes() -> None:
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    QCoreApplication.processEvents()


@pytest.fixture
def make_main_window(qtbot, isolated_settings):
    from explorer.ui.main_window import MainWindow

    _flush_deletes()
    before = {_address(w) for w in QApplication.topLevelWidgets()}
    windows = []

    def make(create_panels: bool = True, **kwargs) -> MainWindow:
        kwargs.setdefault("load_demo", False)
        window = MainWindow(settings=isolated_settings, **kwargs)
        windows.append(window)
        if create_panels:  # the app does this after the first paint
            window.create_panels()
        return window

    yield make

    for window in windows:
        threads = _worker_threads(window)
        window.close()
        for thread in threads:
            assert not thread.isRunning(), f"{thread.objectName()} still runs"
        assert window.controller.training is None and not window.controller.jobs.busy
        window.deleteLater()
    del window
    windows.clear()
    _flush_deletes()
    gc.collect()
    _flush_deletes()
    # pyqtgraph keeps parentless context menus alive in module-level registries, so only the
    # app's own kinds of window count as leaks: the main window, docks, dialogs and message boxes
    leaked = [
        w for w in QApplication.topLevelWidgets()
        if _address(w) not in before and isinstance(w, (QMainWindow, QDialog, QDockWidget))
    ]
    assert not leaked, f"widgets outlived the window: {[type(w).__name__ for w in leaked]}"


def _address(widget) -> int:
    return shiboken6.getCppPointer(widget)[0]


def _worker_threads(window) -> list[QThread]:
    from explorer.ui.jobs import JobRunner

    training = window.controller.training
    return [r.thread for r in window.findChildren(JobRunner)] + (
        [training.thread] if training is not None else [])


@pytest.fixture(scope="session")
def tiny_task_spec():
    from explorer.training.setup import DataSpec

    return DataSpec(task="reverse", n_train=64, n_val=8, seed=0)


@pytest.fixture
def tiny_workspace(tiny_task_spec):
    """A tiny seq2seq GRU with attention on 64 reversal pairs: a step takes milliseconds."""
    import torch

    from explorer.training.config import TrainConfig
    from explorer.training.setup import build_workspace

    torch.manual_seed(0)
    workspace = build_workspace(
        tiny_task_spec, "seq2seq", preset="tiny", cell="gru", attention="dot",
        embed_dim=16, hidden_size=16,
    )
    workspace.train_config = TrainConfig(
        batch_size=8, eval_every=5, eval_examples=8, bleu_examples=4, lr=3e-3, seed=0
    )
    return workspace
