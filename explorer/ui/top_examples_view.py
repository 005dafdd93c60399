"""The Examples panel's "Top examples" tab: where one unit or head is most active.

The hidden-state panel (a unit) and the attention panel (a head) ask through the bus
(`top_examples_requested`, an `ActivityQuery`); the search runs over the examples of the table in
the tab's own job runner, batch by batch with progress and Stop. Each hit shows its activity and a
few tokens around the peak; a click selects its row in the table, which makes it the probe.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
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
from explorer.ui.neighbours_view import isolated_workspace
from explorer.ui.progress_bar import FrameProgressBar

HINT = ("Choose a unit in the Hidden states panel or a head in the Attention panel and press "
        "\"Top examples\": the examples where it is most active are listed here.")


def _search(workspace, pairs, query, k: int, progress, stop: threading.Event):
    from explorer.analysis.top_examples import top_examples

    found = top_examples(workspace, pairs, query, k=k, progress=progress, should_stop=stop.is_set)
    if found is None:
        raise UserError("the search for top examples stopped")
    return found


class TopExamplesView(QWidget):
    progressed = Signal(int, int)  # from the runner's thread
    chosen = Signal(int)  # a hit was clicked: its row in the examples table
    found_ready = Signal()

    def __init__(self, panel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = panel.job_runner("top-examples")
        self.found = None  # explorer.analysis.top_examples.TopExamples shown
        self.message = ""
        self._stop = threading.Event()
        self.k_box = QSpinBox()
        self.k_box.setRange(1, 1000)
        self.k_box.setValue(10)
        self.k_box.setPrefix("top ")
        self.k_box.setToolTip("How many examples to list")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the search")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop)
        self.progress = FrameProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setToolTip("Examples searched")
        self.status = QLabel(HINT)
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["activity", "example", "around the peak", "key"])
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.Stretch)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setToolTip("Click an example to select its row in the table (and probe it). The tokens "
                                 "are those each position reads (a decoder: <bos> and the reference)")
        self.table.cellClicked.connect(self._on_click)
        row = QHBoxLayout()
        for widget in (self.k_box, self.stop_button, self.progress):
            row.addWidget(widget)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.table, 1)
        self.progressed.connect(self._on_progress)
        self.runner.done.connect(self._on_found)
        self.runner.failed.connect(lambda _job, message: self.say(message))
        self.runner.busy_changed.connect(self.stop_button.setEnabled)

    def search(self, workspace, pairs, query) -> int:
        """The top examples of `query` among `pairs` (the table's rows), in the background."""
        self.stop()
        self._stop = threading.Event()
        self.progress.setRange(0, len(pairs))
        self.progress.setValue(0)
        self.say(f"searching {len(pairs)} examples for {query.label}…")
        self.status.setToolTip(query.definition)
        return self.runner.submit(_search, isolated_workspace(workspace), pairs, query,
                                  self.k_box.value(), self.progressed.emit, self._stop)

    def stop(self) -> None:
        self._stop.set()
        if self.runner.busy:
            self.runner.cancel()
            self.say("the search stopped; the list keeps what it had")

    def clear(self) -> None:
        self.stop()
        self.found = None
        self.table.setRowCount(0)
        self.say(HINT)

    def _on_progress(self, done: int, total: int) -> None:
        if self.runner.busy:
            self.progress.setRange(0, total)
            self.progress.setValue(done)

    def _on_found(self, _job, found) -> None:
        self.found = found
        self.progress.setValue(self.progress.maximum())
        self.table.setRowCount(len(found.rows))
        for r in range(len(found.rows)):
            texts = (f"{found.activity[r]:.4f}", str(int(found.rows[r]) + 1), found.snippet(r), found.keys[r])
            for c, text in enumerate(texts):
                item = QTableWidgetItem(text)
                if c < 2:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(r, c, item)
        self.say(f"{found.query.label}: the {len(found.rows)} of {found.examples} examples where it "
                  f"peaks highest ({found.query.definition})")
        self.found_ready.emit()

    def _on_click(self, row: int, _column: int) -> None:
        if self.found is not None and row < len(self.found.rows):
            self.chosen.emit(int(self.found.rows[row]))

    def say(self, message: str) -> None:
        self.message = message
        self.status.setText(message)
