"""The probe's nearest training examples by encoder or decoder state, in the Examples panel.

The index is built in the background once per model (or snapshot) and kind of state; each probe
is then one forward pass and a matrix-vector product, also off the GUI thread. Each runner works
on its own copy of the model, so neither races the other nor the panel's evaluation.
"""

from __future__ import annotations

import copy
import threading

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.errors import UserError
from explorer.ui.panels.base import elide
from explorer.ui.progress_bar import FrameProgressBar

SHOWN = 10


def isolated_workspace(workspace):
    """A workspace sharing tokenizers and data but with its own copy of the model."""
    twin = copy.copy(workspace)
    twin.model = copy.deepcopy(workspace.model)
    return twin


def _build(workspace, pairs, kind, step, progress, stop: threading.Event):
    from explorer.analysis.neighbours import build_index

    index = build_index(workspace, pairs, kind, step, progress=progress, should_stop=stop.is_set)
    if index is None:
        raise UserError("building the neighbour index stopped")
    return index


class NeighboursView(QWidget):
    progressed = Signal(int, int)  # from the index runner's thread
    chosen = Signal(str, str)  # a neighbour was clicked: (source, target)

    def __init__(self, panel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.index_runner = panel.job_runner("neighbour-index")
        self.query_runner = panel.job_runner("neighbour-query")
        self.state = panel.bus.state  # the workspace and the probe input, read there
        self.index_workspace = None  # the index runner's own copy
        self.query_workspace = None  # the query runner's own copy
        self.index = None
        self.neighbours = []
        self.queried = ""  # the probe source whose neighbours were asked for last
        self._stop = threading.Event()
        self.kind_box = QComboBox()
        self.kind_box.addItem("encoder state", "encoder")
        self.kind_box.addItem("decoder state at step", "decoder")
        self.kind_box.setToolTip("Encoder: an RNN's final state, a Transformer's mean-pooled "
                                 "output. Decoder: its output at this step, reading the target")
        self.step_box = QSpinBox()
        self.step_box.setRange(0, 500)
        self.step_box.setToolTip("The output step whose decoder state is compared")
        self.step_box.setEnabled(False)  # the encoder's state has no step
        self.build_button = QPushButton("Build index")
        self.build_button.setToolTip("Index every training pair by this kind of state")
        self.build_button.clicked.connect(self.build)
        self.progress = FrameProgressBar()
        self.progress.setMaximumWidth(160)
        self.status = QLabel("Build the index to see the probe's nearest training examples.")
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["source", "target", "distance"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setToolTip("Click a neighbour to make it the probe")
        self.table.cellClicked.connect(self._on_click)
        row = QHBoxLayout()
        for widget in (QLabel("by"), self.kind_box, self.step_box, self.build_button, self.progress):
            row.addWidget(widget)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        self.kind_box.currentIndexChanged.connect(lambda _: self._forget_index())
        self.kind_box.currentIndexChanged.connect(
            lambda _: self.step_box.setEnabled(self.kind_box.currentData() == "decoder"))
        self.step_box.valueChanged.connect(lambda _: self._forget_index())
        self.progressed.connect(self._on_progress)
        self.index_runner.done.connect(self._on_index)
        self.index_runner.failed.connect(lambda _job, message: self._say(message))
        self.query_runner.done.connect(self._on_neighbours)
        self.query_runner.failed.connect(lambda _job, message: self._say(message))

    def set_workspace(self, workspace) -> None:
        self.stop()
        self.index_workspace = self.query_workspace = None
        self._forget_index()
        usable = workspace is not None and workspace.is_seq2seq and getattr(workspace, "data", None) is not None
        self.build_button.setEnabled(usable)
        if workspace is not None and not usable:
            self._say("neighbours need an encoder-decoder with its training data loaded")

    def _forget_index(self) -> None:
        self.index = None
        self.table.setRowCount(0)

    def build(self) -> int:
        if self.state.workspace is None or not self.build_button.isEnabled():
            return -1
        if self.index_workspace is None:
            self.index_workspace = isolated_workspace(self.state.workspace)
        pairs = list(self.state.workspace.data.train)
        self._stop = threading.Event()
        self.progress.setRange(0, len(pairs))
        self.progress.setValue(0)
        self._say(f"indexing {len(pairs)} training pairs…")
        kind = self.kind_box.currentData()
        step = self.step_box.value() if kind == "decoder" else None
        return self.index_runner.submit(_build, self.index_workspace, pairs, kind, step,
                                        self.progressed.emit, self._stop)

    def stop(self) -> None:
        self._stop.set()
        self.index_runner.cancel()
        self.query_runner.cancel()

    def query(self, *_probe_input) -> int:
        """The probe input's nearest neighbours (the state's; it calls this when it changes)."""
        source, target = self.state.probe_text
        if self.index is None or not source:
            return -1
        from explorer.analysis.neighbours import nearest

        if self.query_workspace is None:
            self.query_workspace = isolated_workspace(self.state.workspace)
        self.queried = source
        return self.query_runner.submit(nearest, self.query_workspace, self.index, source, target,
                                        SHOWN)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, total)
        self.progress.setValue(done)

    def _on_index(self, _job, index) -> None:
        self.index = index
        self._say(f"{len(index)} training pairs indexed by {self._state_name()}")
        self.query()

    def _on_neighbours(self, _job, neighbours) -> None:
        if self.index is None:  # forgotten meanwhile (another kind of state asked for)
            return
        self.neighbours = neighbours
        self._say(f"the {len(neighbours)} of {len(self.index)} training pairs nearest to the probe "
                  f"{elide(self.queried)!r} by {self._state_name()}")
        self.table.setRowCount(len(neighbours))
        for r, n in enumerate(neighbours):
            for c, text in enumerate((n.source, n.target, f"{n.distance:.4f}")):
                item = QTableWidgetItem(text)
                if c == 2:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(r, c, item)

    def _on_click(self, row: int, _column: int) -> None:
        if row < len(self.neighbours):
            self.chosen.emit(self.neighbours[row].source, self.neighbours[row].target)

    def _state_name(self) -> str:
        index = self.index
        return "encoder state" if index.kind == "encoder" else f"decoder state at step {index.step}"

    def busy(self) -> bool:
        return self.index_runner.busy or self.query_runner.busy

    def _say(self, message: str) -> None:
        self.status.setText(message)
