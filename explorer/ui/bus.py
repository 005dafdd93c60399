"""The app's event bus: the core's plain-data events, re-emitted on the GUI thread for panels.

It is the one adapter between the Qt-free app state (explorer/state.py: the workspace, the
training state, the probe input) and Qt: it holds the `AppState` and re-emits its change events as
the signals `workspace_changed`, `training_state` and `probe_input_changed`. Those values live in
the state only; `bus.workspace` and `bus.probe_text` read it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal


class AppBus(QObject):
    workspace_changed = Signal(object)  # explorer.workspace.Workspace (or None)
    step_metrics = Signal(object)  # list[explorer.events.StepMetrics], oldest first
    eval_metrics = Signal(object)  # explorer.events.EvalMetrics
    probe = Signal(object)  # explorer.events.ProbeSnapshot
    # the same probe's attention maps ahead of it (a ProbeSnapshot with `attention` only): the
    # Prober's first stage, so the attention panel draws before the gradients are computed
    probe_attention = Signal(object)
    training_state = Signal(str)  # explorer.state.TRAINING_STATES: "idle", "running", ...
    train_config_changed = Signal(object)  # the TrainConfig in use (lr, clip τ, ...)
    # probing (explorer/ui/probing.py): panels ask, the controller's Prober answers
    probe_requested = Signal(str, str)  # a panel asks for this (source, target) to be probed
    probe_input_changed = Signal(str, str)  # what is probed from now on
    probe_failed = Signal(str)  # one line, e.g. an LM text of a single token
    probing_changed = Signal(bool)  # a probe runs (True) or has been delivered (False)
    # an output token picked to be explained (explorer.analysis.token_pick.TokenPick): panels ask,
    # the Prober probes its input and answers `token_picked` for the attribution view
    token_pick_requested = Signal(object)
    token_picked = Signal(object)
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
    whatif_requested = Signal(str)  # pin this source as the What if panel's original
    # an explorer.analysis.top_examples.ActivityQuery (a unit or a head): the Examples panel lists
    # the examples where it is most active
    top_examples_requested = Signal(object)
    units_selected = Signal(object)  # the Hidden panel's unit selection: (RNN state point, [units])

    def __init__(self, parent: QObject | None = None, state=None) -> None:
        from explorer.state import AppState

        super().__init__(parent)
        self.state = AppState() if state is None else state
        self.state.workspace_changed.connect(self.workspace_changed.emit)
        self.state.training_changed.connect(self._on_training)
        self.state.probe_input_changed.connect(self.probe_input_changed.emit)
        self.probing = False
        self.run = None  # explorer.ui.run_session.RunView while a run is on show
        self.compared_runs_now: dict = {}  # the last `compared_runs`, for a panel made later

    @property
    def workspace(self):
        return self.state.workspace

    @property
    def probe_text(self) -> tuple[str, str]:
        """What is probed: (source, target)."""
        return self.state.probe_text

    def _on_training(self, training, previous) -> None:
        if training.status != previous.status:
            self.training_state.emit(training.status)

    def shows_run(self, workspace) -> bool:
        """True when `workspace` is the one the run on show loaded (a snapshot of it)."""
        return self.run is not None and workspace is not None and self.run.workspace is workspace

    def set_workspace(self, workspace, keep_probe: bool = False) -> None:
        self.state.set_workspace(workspace, keep_probe)

    def set_probing(self, probing: bool) -> None:
        self.probing = probing
        self.probing_changed.emit(probing)
