"""The timeline: a slider over a run's snapshots, in its own dock ("timeline").

Each slider position is one snapshot (plus the run's latest checkpoint when no snapshot has its
step); ticks mark them, the labels under the slider name the first and last steps, and the label
beside it says which step the panels show and whether the run is still being written. Dragging
chooses a position as the slider moves; the run session (explorer/ui/run_session.py) loads it
off the GUI thread, newest wins. The widget holds no run state of its own beyond the list.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QMainWindow,
    QSizePolicy,
    QSlider,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from explorer.ui.live_text import LiveText

TIMELINE_ID = "timeline"


class TimelineWidget(QWidget):
    position_chosen = Signal(int)  # an index into `steps`, chosen by the user

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("timelineWidget")
        self.steps: list[int] = []
        self.previous = QToolButton()
        self.previous.setArrowType(Qt.ArrowType.LeftArrow)
        self.previous.setToolTip("The previous snapshot (Alt+Left)")
        self.next = QToolButton()
        self.next.setArrowType(Qt.ArrowType.RightArrow)
        self.next.setToolTip("The next snapshot (Alt+Right)")
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setObjectName("timelineSlider")
        self.slider.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.slider.setPageStep(1)
        self.slider.setToolTip("Drag to a snapshot: every panel shows the model as it was then")
        # these change at every probe while the app trains: LiveText's size never follows its text
        # (a QLabel's re-laid out the window's docks, with their animations, each time)
        self.first_label = LiveText(widest="step 0000000")
        self.last_label = LiveText(widest="step 0000000",
                                   alignment=Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        for label in (self.first_label, self.last_label):
            label.setToolTip("The first and the last snapshot's training step")
        self.step_label = LiveText(widest="step 0000000 (0000/0000)")
        self.step_label.setObjectName("timelineStep")
        self.step_label.setToolTip("The step of the snapshot the panels show")
        # wrapped in two lines, never cut: "run … finished at step N (stopped)" is wider than its
        # column
        self.state_label = LiveText("Open a run folder (File ▸ Open checkpoint) to scrub through it.",
                                    lines=2)
        self.state_label.setObjectName("timelineState")
        self.state_label.setToolTip("Whether the run is still being written")
        self.state_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

        ends = QHBoxLayout()
        ends.setContentsMargins(0, 0, 0, 0)
        ends.addWidget(self.first_label)
        ends.addStretch(1)
        ends.addWidget(self.last_label)
        track = QVBoxLayout()
        track.setSpacing(0)
        track.addWidget(self.slider)
        track.addLayout(ends)
        said = QVBoxLayout()  # the step shown beside the slider, the run's state under it
        said.setSpacing(0)
        said.addWidget(self.step_label)
        said.addWidget(self.state_label)
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 2, 4, 2)
        row.addWidget(self.previous)
        row.addLayout(track, 3)
        row.addWidget(self.next)
        row.addLayout(said, 2)
        self.previous.clicked.connect(lambda: self.move_by(-1))
        self.next.clicked.connect(lambda: self.move_by(1))
        self.slider.valueChanged.connect(self._on_slider)
        self.set_steps([])

    def set_steps(self, steps: list[int], index: int | None = None) -> None:
        """The run's positions (steps, oldest first) and the one shown; nothing is chosen."""
        self.steps = list(steps)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, len(steps) - 1))
        if index is not None:
            self.slider.setValue(index)
        self.slider.blockSignals(False)
        self.slider.setTickInterval(max(1, len(steps) // 50))  # a tick per snapshot, up to 50
        enabled = len(steps) > 1
        for widget in (self.slider, self.previous, self.next):
            widget.setEnabled(enabled)
        self.first_label.setText(f"step {steps[0]}" if steps else "")
        self.last_label.setText(f"step {steps[-1]}" if len(steps) > 1 else "")
        self._show_step(self.slider.value())

    def show_index(self, index: int) -> None:
        """Put the slider at `index` without choosing it (the session's answer to a choice)."""
        self.slider.blockSignals(True)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        self._show_step(index)

    def index(self) -> int:
        return self.slider.value()

    def move_by(self, delta: int) -> None:
        """One snapshot back or forward (the keys and the arrow buttons)."""
        if not self.steps:
            return
        index = min(max(self.slider.value() + delta, 0), len(self.steps) - 1)
        if index != self.slider.value():
            self.slider.setValue(index)  # -> _on_slider -> position_chosen

    def set_state(self, message: str) -> None:
        self.state_label.setText(message)
        self.state_label.setToolTip(message)

    def _on_slider(self, index: int) -> None:
        self._show_step(index)
        self.position_chosen.emit(index)

    def _show_step(self, index: int) -> None:
        if not self.steps:
            self.step_label.setText("")
            self.slider.setToolTip("No run open")
            return
        step = self.steps[min(index, len(self.steps) - 1)]
        text = f"step {step} ({index + 1}/{len(self.steps)})"
        self.step_label.setText(text)
        self.slider.setToolTip(f"Snapshot at {text}: drag to another, or press Alt+Left / "
                               "Alt+Right")


def add_timeline_dock(window: QMainWindow) -> tuple[QDockWidget, TimelineWidget]:
    """The timeline's dock, under the whole window, hidden until a run is opened."""
    dock = QDockWidget("Timeline", window)
    dock.setObjectName(TIMELINE_ID)
    dock.setToolTip("A run's snapshots: scrub through its training")
    widget = TimelineWidget(dock)
    dock.setWidget(widget)
    for corner in (Qt.Corner.BottomLeftCorner, Qt.Corner.BottomRightCorner):
        window.setCorner(corner, Qt.DockWidgetArea.BottomDockWidgetArea)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    dock.hide()
    return dock, widget
