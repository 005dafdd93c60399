"""The "Side by side" page of the Compare runs panel: two chosen runs' attention on the same input.

Each side picks a run and a checkpoint of it (its latest, or one of its snapshots); one source
(and optionally a target) is given for both. The checkpoints are loaded and probed in the panel's
background job (explorer.runs.compare.compare_attention), and each side shows its cross-attention
(the last layer, heads averaged) in a HeatmapWidget, or one line saying why it has none.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.export.tables import matrix_table
from explorer.runs.compare import AttentionComparison, AttentionView, compare_attention
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.jobs import JobRunner

LATEST = None  # the step combo's data for "the latest checkpoint"
SIDES = ("A", "B")


class AttentionSide(QWidget):
    """One side: a heatmap, or a message where the run has no attention to show."""

    def __init__(self, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = label
        self.view: AttentionView | None = None
        self.heatmap = HeatmapWidget("viridis", levels=(0.0, 1.0), row_title="query (target)",
                                     col_title="key (source)", value_name="weight")
        self.heatmap.setToolTip(f"Run {label}'s attention weights: rows are the target tokens, "
                                "columns the source tokens; hover a cell for its weight.")
        self.message = QLabel(f"Choose run {label} and press Compare.")
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.heatmap)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    def show_view(self, view: AttentionView) -> None:
        self.view = view
        if view.matrix is None:
            self.message.setText(view.message)
            self.stack.setCurrentWidget(self.message)
            return
        self.heatmap.set_matrix(view.matrix, view.rows, view.cols)
        self.heatmap.set_title(f"{self.label}: {view.title}")
        self.stack.setCurrentWidget(self.heatmap)

    def show_message(self, text: str) -> None:
        self.view = None
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message)

    def has_matrix(self) -> bool:
        return self.view is not None and self.view.matrix is not None


class SideBySide(QWidget):
    """Run and checkpoint choosers for sides A and B, the shared input, and the two heatmaps."""

    compared = Signal(object)  # the AttentionComparison shown
    failed = Signal(str)

    def __init__(self, runner: JobRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = runner
        self.folders: dict[str, Path] = {}  # run name -> folder
        self.snapshots: dict[str, list[int]] = {}  # run name -> its snapshot steps
        self.picked = {side: False for side in SIDES}  # the user chose this side's run
        self.comparison: AttentionComparison | None = None
        self.run_boxes = {side: QComboBox() for side in SIDES}
        self.step_boxes = {side: QComboBox() for side in SIDES}
        self.source_edit = QLineEdit()
        self.source_edit.setPlaceholderText("source (blank: run A's first validation example)")
        self.source_edit.setToolTip("The input both models read. Blank: the first validation "
                                    "example of run A's data, with its reference target.")
        self.target_edit = QLineEdit()
        self.target_edit.setPlaceholderText("target (blank: each model's own greedy output)")
        self.target_edit.setToolTip("The target both decoders are teacher-forced with. Blank: "
                                    "each model's own greedy output for the source.")
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Load both checkpoints and show their attention on this "
                                       "input, side by side (Enter in either text box)")
        self.status = QLabel("Add two runs to compare their attention.")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.sides = {side: AttentionSide(side) for side in SIDES}

        controls = QGridLayout()
        for row, side in enumerate(SIDES):
            self.run_boxes[side].setToolTip(f"Run {side}: one of the runs added to the panel")
            self.step_boxes[side].setToolTip(f"Which checkpoint of run {side}: its latest, or "
                                             "the snapshot of a step")
            self.run_boxes[side].setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            controls.addWidget(QLabel(f"Run {side}"), row, 0)
            controls.addWidget(self.run_boxes[side], row, 1)
            controls.addWidget(self.step_boxes[side], row, 2)
            self.run_boxes[side].currentIndexChanged.connect(
                lambda _=0, s=side: self._fill_steps(s))
            self.run_boxes[side].activated.connect(
                lambda _=0, s=side: self.picked.__setitem__(s, True))
        controls.addWidget(QLabel("Source"), 0, 3)
        controls.addWidget(self.source_edit, 0, 4)
        controls.addWidget(QLabel("Target"), 1, 3)
        controls.addWidget(self.target_edit, 1, 4)
        controls.addWidget(self.compare_button, 0, 5, 2, 1)
        controls.setColumnStretch(4, 1)
        maps = QHBoxLayout()
        for side in SIDES:
            maps.addWidget(self.sides[side], stretch=1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addLayout(maps, stretch=1)

        self.compare_button.clicked.connect(self.compare)
        self.source_edit.returnPressed.connect(self.compare)
        self.target_edit.returnPressed.connect(self.compare)
        runner.done.connect(self._on_done)
        runner.failed.connect(self._on_failed)
        runner.busy_changed.connect(self._on_busy)

    # -- the runs to choose from -------------------------------------------------------------

    def set_runs(self, folders: dict[str, Path], snapshots: dict[str, list[int]]) -> None:
        """The panel's runs (name -> folder) and their snapshot steps. A run the user chose stays
        chosen while it is there; otherwise side A shows the first run and side B the second."""
        self.folders, self.snapshots = dict(folders), dict(snapshots)
        names = list(folders)
        for index, side in enumerate(SIDES):
            box = self.run_boxes[side]
            current = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems(names)
            if current in names and self.picked[side]:
                box.setCurrentText(current)
            elif names:
                box.setCurrentIndex(min(index, len(names) - 1))
            box.blockSignals(False)
            self._fill_steps(side)
        self.compare_button.setEnabled(bool(names))

    def _fill_steps(self, side: str) -> None:
        box = self.step_boxes[side]
        chosen = box.currentData()
        box.blockSignals(True)
        box.clear()
        box.addItem("latest", LATEST)
        for step in self.snapshots.get(self.run_boxes[side].currentText(), []):
            box.addItem(f"step {step}", step)
        found = box.findData(chosen)
        box.setCurrentIndex(max(found, 0))
        box.blockSignals(False)

    def choose(self, side: str, name: str, step: int | None = LATEST) -> None:
        """Pick run `name` (and a snapshot step) for `side`, as the combo boxes do."""
        self.picked[side] = True
        self.run_boxes[side].setCurrentText(name)
        self._fill_steps(side)
        self.step_boxes[side].setCurrentIndex(max(self.step_boxes[side].findData(step), 0))

    # -- the job -----------------------------------------------------------------------------

    def compare(self) -> None:
        chosen = []
        for side in SIDES:
            name = self.run_boxes[side].currentText()
            if name not in self.folders:
                self.status.setText("Add two runs to compare their attention.")
                return
            chosen.append((self.folders[name], name, self.step_boxes[side].currentData()))
        self.runner.submit(compare_attention, chosen, self.source_edit.text().strip(),
                           self.target_edit.text().strip())

    def _on_busy(self, busy: bool) -> None:
        if busy:
            self.status.setText("Loading the checkpoints and probing…")

    def _on_done(self, _job_id: int, comparison: AttentionComparison) -> None:
        self.comparison = comparison
        if not self.source_edit.text().strip():
            self.source_edit.setText(comparison.source)
            self.target_edit.setText(comparison.target)
        for side, view in zip(SIDES, comparison.views):
            self.sides[side].show_view(view)
        target = comparison.target or "each model's own output"
        self.status.setText(f"Source: {comparison.source!r}; target: {target!r}")
        self.compared.emit(comparison)

    def _on_failed(self, _job_id: int, message: str) -> None:
        self.status.setText(message)
        self.failed.emit(message)

    # -- export --------------------------------------------------------------------------------

    def plot_items(self) -> dict[str, object]:
        return {f"attention_{side.lower()}": self.sides[side].heatmap.ci
                for side in SIDES if self.sides[side].has_matrix()}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        tables = {}
        for side in SIDES:
            view = self.sides[side].view
            if view is not None and view.matrix is not None:
                tables[f"attention_{side.lower()}"] = matrix_table(
                    view.matrix, view.rows, view.cols, corner=f"{view.run} step {view.step}")
        return tables
