"""The one place the app probes: a Prober probes the app state's probe input, once per change.

The input lives in the app state (explorer/state.py), which a new workspace resets to its first
validation example. Panels never probe. They ask on the bus (`probe_requested(source, target)`, or
`token_pick_requested(pick)` for one output token to explain), which the Prober sets on the state;
they hear the new input (`probe_input_changed`, read `bus.probe_text`, then `token_picked(pick)`)
and the result (`probe(snapshot)` or `probe_failed(message)`), and read `bus.probing` while a
probe runs. The Prober probes in two stages (explorer.analysis.probe.probe_stages): the attention
maps of a forward pass without autograd come first (`probe_attention(snapshot)`), for the panels
that need nothing else, and the complete snapshot follows on `probe`.
While training runs the trainer probes the same input (see `Controller.train`) and its snapshots
reach the bus the same way, so data flows one way: worker -> snapshot -> panels.

The controller owns the app's Prober; `explorer export` and panel tests, which have no controller,
make one for their bus.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from explorer.ui.bus import AppBus
from explorer.ui.jobs import JobRunner


class Prober(QObject):
    def __init__(self, bus: AppBus, parent: QObject | None = None) -> None:
        super().__init__(parent if parent is not None else bus)
        self.bus = bus
        self.state = bus.state
        self.runner = JobRunner("probe", self)
        self.runner.partial.connect(lambda _job, snapshot: bus.probe_attention.emit(snapshot))
        self.runner.done.connect(lambda _job, snapshot: bus.probe.emit(snapshot))
        self.runner.failed.connect(lambda _job, message: bus.probe_failed.emit(
            f"probe failed: {message}"))
        self.runner.busy_changed.connect(bus.set_probing)
        # the state's events through the bus, whose Qt connections end with the Prober
        bus.workspace_changed.connect(self._on_workspace)
        bus.probe_input_changed.connect(self._on_probe_input)
        self._was_training = False
        bus.training_state.connect(self._on_training_state)
        bus.probe_requested.connect(self.set_input)
        bus.token_pick_requested.connect(self.pick_token)
        bus.explanation_requested.connect(self._set_explanation)

    @property
    def input(self):
        """The probe input (the state's), which the trainer's probe_fn reads between steps."""
        return self.state.probe

    def set_input(self, source: str, target: str = "") -> None:
        """Probe this input from now on (and at once, unless the trainer probes it)."""
        self.state.set_probe_input(source, target)

    def pick_token(self, pick) -> None:
        """Probe the picked token's input; the attribution view then explains that token."""
        self.set_input(pick.source, pick.target)
        self.bus.token_picked.emit(pick)

    def probe(self) -> None:
        from explorer.analysis.probe import probe_stages

        workspace = self.state.workspace
        if workspace is None or self.state.training.active or not self.input:
            return  # while training, the trainer probes `input` itself
        self.runner.submit(probe_stages, workspace, *self.input.text, workspace.step, self.input.live)

    def _set_explanation(self, request) -> None:
        self.input.explanation = request  # read by the trainer's probe_fn between steps

    def wait_idle(self) -> None:
        """Let a running probe return before the model goes to the training thread."""
        self.runner.wait_idle()

    def shutdown(self) -> None:
        self.runner.shutdown()

    def _on_workspace(self, _workspace) -> None:
        self.runner.cancel()  # a probe of the previous model is of no use now; the state
        # announces the probe input next, which probes the new one

    def _on_probe_input(self, _source: str, _target: str) -> None:
        self.probe()

    def _on_training_state(self, _status: str) -> None:
        was_training, self._was_training = self._was_training, self.state.training.active
        if was_training and not self._was_training:
            # the trainer's last probe may be a few steps older than the weights: probe them, once
            # this event is handled (a restart, e.g. a new batch size, trains on at once: no probe)
            stopped_on = self.state.workspace
            QTimer.singleShot(0, self, lambda: self._probe_after_training(stopped_on))

    def _probe_after_training(self, workspace) -> None:
        if not self.state.training.active and self.state.workspace is workspace:
            self.probe()
