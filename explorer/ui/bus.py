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
    # probing (explorer/ui/probing.py): panels ask, the controller's Prober answers
    probe_requested = Signal(str, str)  # a panel asks for this (source, target) to be probed
    probe_input_changed = Signal(str, str)  # what is probed from now on
    probe_failed = Signal(str)  # one line, e.g. an LM text of a single token
    probing_changed = Signal(bool)  # a probe runs (True) or has been delivered (False)
    # an explorer.analysis.explain.ExplainRequest the training probe computes too (None: none);
    # the attribution view asks while it is shown and follows the probe
    explanation_requested = Signal(object)
    # runs (explorer/ui/run_session.py): `run` names the workspace a run folder shows; the curves
    # panels keep that run's recorded curves for it and mark the step shown
    run_changed = Signal(object)  # explorer.ui.run_session.RunView, or None: no run on show
    run_curves = Signal(object)  # explorer.ui.run_session.RunCurves: its rows, all or appended
    run_step = Signal(object)  # the step of the snapshot the panels show (int), or None
    run_folder_changed = Signal(str)  # the run folder the current training writes ("" for none)
    compared_runs = Signal(object)  # {name: run folder} in the Compare runs panel, on each change
    show_panel = Signal(str)  # raise this panel's dock (the architecture diagram's double click)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.workspace = None
        self.probing = False
        self.run = None  # explorer.ui.run_session.RunView while a run is on show
        self.compared_runs_now: dict = {}  # the last `compared_runs`, for a panel made later

    def shows_run(self, workspace) -> bool:
        """True when `workspace` is the one the run on show loaded (a snapshot of it)."""
        return self.run is not None and workspace is not None and self.run.workspace is workspace

    def set_workspace(self, workspace) -> None:
        self.workspace = workspace
        self.workspace_changed.emit(workspace)

    def set_probing(self, probing: bool) -> None:
        self.probing = probing
        self.probing_changed.emit(probing)
