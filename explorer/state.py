"""The app's state in one Qt-free object, as napari's ViewerModel: the open workspace, the
training state and the probe input, each announced by a change event.

Everything that shows or acts on these reads them here and subscribes to their events instead
of keeping a copy: the UI's controller (which sets them), its Prober (which probes the input),
and the panels, through the bus (explorer/ui/bus.py), which re-emits these events as Qt signals
on the GUI thread. A headless user (a script, `explorer export`) can use it without Qt.

The events are plain callbacks, called in the order they subscribed, on the thread that made
the change (the GUI thread, in the app).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from explorer.analysis.probe_input import ProbeInput, default_probe_input

TRAINING_STATES = ("idle", "running", "paused", "stopped")


class Event:
    """A list of callbacks, called with the event's arguments on `emit`."""

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        for callback in list(self._callbacks):  # a callback may disconnect itself
            callback(*args)


@dataclass(frozen=True)
class Training:
    """Where training stands: `status` is one of TRAINING_STATES; `target_steps` is the step
    the current run trains to (None: open-ended, or no run)."""

    status: str = "idle"
    target_steps: int | None = None

    @property
    def active(self) -> bool:
        """A run holds the model (it trains, or waits paused between steps)."""
        return self.status in ("running", "paused")


class AppState:
    """The workspace, the training state and the probe input, with their change events:
    `workspace_changed(workspace)`, `training_changed(training, previous)` (both `Training`) and
    `probe_input_changed(source, target)`."""

    def __init__(self) -> None:
        self.workspace = None
        # the last set_workspace set the workspace already shown: the same model with new
        # weights (after training, another snapshot of the run), so views keep their history
        self.same_model = False
        self.training = Training()
        # read by the trainer's probe_fn between steps (explorer.analysis.probe.make_probe_fn)
        self.probe = ProbeInput()
        self.workspace_changed = Event()
        self.training_changed = Event()
        self.probe_input_changed = Event()

    @property
    def probe_text(self) -> tuple[str, str]:
        return self.probe.text

    def set_workspace(self, workspace, keep_probe: bool = False) -> None:
        """Show `workspace`. Setting the same object again means "same model, new weights".
        The probe input becomes the workspace's first validation example, unless `keep_probe`
        (another snapshot of the same run: the same input on other weights). Both events fire,
        the workspace's first, so a listener to either sees the new workspace and its input."""
        self.same_model = workspace is not None and workspace is self.workspace
        self.workspace = workspace
        if workspace is None:
            self.probe.set("", "")
        elif not (keep_probe and self.probe):
            self.probe.set(*default_probe_input(workspace))
        self.workspace_changed.emit(workspace)
        self.probe_input_changed.emit(*self.probe.text)

    def set_probe_input(self, source: str, target: str = "") -> None:
        """Probe this input from now on."""
        self.probe.set(source, target)
        self.probe_input_changed.emit(source, target)

    def set_training(self, status: str | None = None, **changes) -> None:
        """Change the training state (status and/or target_steps); announced when it changed."""
        if status is not None:
            if status not in TRAINING_STATES:
                raise ValueError(f"unknown training state {status!r}")
            changes["status"] = status
        training = replace(self.training, **changes)
        if training != self.training:
            previous, self.training = self.training, training
            self.training_changed.emit(training, previous)
