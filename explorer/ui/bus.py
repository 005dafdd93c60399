"""The app's event bus: the core's plain-data events, re-emitted on the GUI thread for panels."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class AppBus(QObject):
    workspace_changed = Signal(object)  # explorer.workspace.Workspace (or None)
    step_metrics = Signal(object)  # list[explorer.events.StepMetrics], oldest first
    eval_metrics = Signal(object)  # explorer.events.EvalMetrics
    probe = Signal(object)  # explorer.events.ProbeSnapshot
    training_state = Signal(str)  # "idle", "running", "paused" or "stopped"
    train_config_changed = Signal(object)  # the TrainConfig in use (lr, clip τ, ...)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.workspace = None

    def set_workspace(self, workspace) -> None:
        self.workspace = workspace
        self.workspace_changed.emit(workspace)
