"""The main window's permanent status-bar widgets: device, step, tokens/s and the run's progress.

They follow the controller (stats, device) and the bus (training state, workspace) on their own;
the window keeps the transient messages (`statusBar().showMessage`).
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QMainWindow

from explorer.ui.live_text import LiveText
from explorer.ui.progress_bar import FrameProgressBar

STATUS_INTERVAL_MS = 500


class TrainingStatus:
    """Builds its widgets into `window`'s status bar and keeps them up to date."""

    def __init__(self, window: QMainWindow, controller, bus) -> None:
        self._window, self._controller = window, controller
        self.device_label = QLabel("device: –")
        self.device_label.setToolTip("The device the model trains on")
        # set twice a second while training: LiveText repaints where a QLabel re-laid out the window
        self.step_label = LiveText("step: –", widest="step: 0000000")
        self.step_label.setToolTip("Optimisation steps done")
        self.speed_label = LiveText("tokens/s: –", widest="tokens/s: 000,000")
        self.speed_label.setToolTip("Target tokens per second, training throughput")
        self.progress = FrameProgressBar()  # painted with the next frame, never at once
        self.progress.setMaximumWidth(180)
        self.progress.setToolTip("Progress of the current training run")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(False)  # shown while a run is under way
        # hidden while idle (an empty bar read as a text box), its room kept: no re-layout
        policy = self.progress.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.progress.setSizePolicy(policy)
        self.progress.setVisible(False)
        for label in (self.step_label, self.speed_label):  # room for long numbers from the start
            label.setMinimumWidth(label.sizeHint().width())
        bar = window.statusBar()
        for widget in (self.device_label, self.step_label, self.speed_label, self.progress):
            bar.addPermanentWidget(widget)
        self._stats_throttle = None

        controller.stats.connect(self.queue_stats)
        controller.device_changed.connect(lambda device: self.device_label.setText(f"device: {device}"))
        bus.training_state.connect(self.show_training_state)
        bus.workspace_changed.connect(self.show_workspace)

    def queue_stats(self, metrics) -> None:
        """The status bar follows the newest metrics twice a second, not every batch: each update
        costs the GUI thread (and the GIL the trainer needs) a few milliseconds."""
        if self._stats_throttle is None:
            # imported here, after the first paint: superqt loads all its widgets (~0.3 s)
            from superqt.utils import qthrottled

            self._stats_throttle = qthrottled(self.show_stats, timeout=STATUS_INTERVAL_MS,
                                              parent=self._window)
        self._stats_throttle(metrics)

    def show_stats(self, metrics) -> None:
        self.step_label.setText(f"step: {metrics.step}")
        self.speed_label.setText(f"tokens/s: {metrics.tokens_per_s:,.0f}")
        if metrics.total_steps and self._controller.state in ("running", "paused"):
            # (a throttled update that lands after Stop must not bring the old percentage back)
            self.progress.setRange(0, metrics.total_steps)
            self.progress.setValue(min(metrics.step, metrics.total_steps))

    def show_training_state(self, state: str) -> None:
        running = state in ("running", "paused")
        self.progress.setTextVisible(running)
        self.progress.setVisible(running)
        if not running:  # no run, no progress: an old percentage would say one is under way
            self.progress.setRange(0, 1)
            self.progress.setValue(0)

    def show_workspace(self, workspace) -> None:
        if workspace is None:
            return
        device = getattr(self._controller.train_config, "device", "cpu")
        try:
            device = str(next(workspace.model.parameters()).device)
        except (StopIteration, AttributeError):
            pass
        self.device_label.setText(f"device: {device}")
        self.step_label.setText(f"step: {workspace.step}")
