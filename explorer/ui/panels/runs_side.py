"""The "Side by side" page of the Compare runs panel: two chosen runs' attention or beam search
trees on the same input.

Each side picks a run and a checkpoint of it (its latest, or one of its snapshots); one source
(and, for attention, optionally a target) is given for both. The checkpoints are loaded and run in
the panel's background job (explorer.runs.compare.compare_attention / compare_beams), and each
side shows its cross-attention (the last layer, heads averaged) in a HeatmapWidget or its beam
search tree (explorer/ui/panels/runs_beam.py), or one line saying why it has none.
"""

from __future__ import annotations

import html
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
from explorer.runs.compare import (
    AttentionComparison, AttentionView, BeamComparison, BeamView, compare_attention, compare_beams,
)
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.jobs import JobRunner
from explorer.ui.panels.decoding_widgets import show_text
from explorer.ui.panels.runs_beam import BeamTreeView

LATEST = None  # the step combo's data for "the latest checkpoint"
SIDES = ("A", "B")
MODES = {"attention": "Attention", "beam": "Beam search tree"}


class ComparedSide(QWidget):
    """One side: a heatmap or a beam tree, or a message where the run has nothing to show."""

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
        self.beam = BeamTreeView()
        self.beam.setToolTip(f"Run {label}'s beam search: x is the decoding step, the best "
                             "branch on top; kept (blue), pruned (grey), finished (green), the "
                             "best hypothesis in purple")
        self.beam_view: BeamView | None = None
        self.stack = QStackedWidget()
        self.stack.addWidget(self.message)
        self.stack.addWidget(self.heatmap)
        self.stack.addWidget(self.beam)
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

    def show_beam(self, view: BeamView) -> None:
        self.beam_view = view
        if view.result is None:
            self.message.setText(view.message)
            self.stack.setCurrentWidget(self.message)
            return
        self.beam.set_result(view.result, f"{self.label}: {html.escape(view.title)}<br>"
                                          f"{html.escape(view.best)}")
        self.stack.setCurrentWidget(self.beam)

    def shows(self) -> str:
        """"attention", "beam" or "" (a message)."""
        current = self.stack.currentWidget()
        return "attention" if current is self.heatmap else "beam" if current is self.beam else ""


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
        self.mode_box = QComboBox()
        for mode, text in MODES.items():
            self.mode_box.addItem(text, mode)
        self.mode_box.setToolTip("What to set side by side: each model's attention on the source "
                                 "and target, or its beam search tree on the source")
        self.compare_button = QPushButton("Compare")
        self.compare_button.setToolTip("Load both checkpoints and show them on this input, side "
                                       "by side (Enter in either text box)")
        self.status = QLabel("Add two runs to compare their attention.")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.sides = {side: ComparedSide(side) for side in SIDES}

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
        controls.addWidget(self.mode_box, 0, 5)
        controls.addWidget(self.compare_button, 1, 5)
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
        self.mode_box.currentIndexChanged.connect(self._on_mode)
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

    def mode(self) -> str:
        return self.mode_box.currentData()

    def set_mode(self, mode: str) -> None:
        self.mode_box.setCurrentIndex(self.mode_box.findData(mode))

    def _on_mode(self) -> None:
        self.target_edit.setEnabled(self.mode() == "attention")  # a beam search reads no target

    def compare(self) -> None:
        chosen = []
        for side in SIDES:
            name = self.run_boxes[side].currentText()
            if name not in self.folders:
                self.status.setText("Add two runs to compare their attention.")
                return
            chosen.append((self.folders[name], name, self.step_boxes[side].currentData()))
        source = self.source_edit.text().strip()
        if self.mode() == "beam":
            self.runner.submit(compare_beams, chosen, source)
        else:
            self.runner.submit(compare_attention, chosen, source, self.target_edit.text().strip())

    def _on_busy(self, busy: bool) -> None:
        if busy:
            self.status.setText("Loading the checkpoints and probing…")

    def _on_done(self, _job_id: int, comparison: AttentionComparison | BeamComparison) -> None:
        self.comparison = comparison
        if not self.source_edit.text().strip():
            show_text(self.source_edit, comparison.source)
        if isinstance(comparison, BeamComparison):
            for side, view in zip(SIDES, comparison.views):
                self.sides[side].show_beam(view)
            self.status.setText(f"Beam search (width 4, α 0.6) on {comparison.source!r}")
        else:
            if not self.target_edit.text().strip():
                show_text(self.target_edit, comparison.target)
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
        """The attention heatmap or beam tree each side shows."""
        items = {}
        for side in SIDES:
            shown = self.sides[side].shows()
            if shown == "attention":
                items[f"attention_{side.lower()}"] = self.sides[side].heatmap.ci
            elif shown == "beam":
                items[f"beam_{side.lower()}"] = self.sides[side].beam.plot
        return items

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        tables = {}
        for side in SIDES:
            shown, key = self.sides[side].shows(), side.lower()
            if shown == "attention":
                view = self.sides[side].view
                tables[f"attention_{key}"] = matrix_table(
                    view.matrix, view.rows, view.cols, corner=f"{view.run} step {view.step}")
            elif shown == "beam":
                for name, table in self.sides[side].beam.tables().items():
                    tables[f"beam_{key}_{name}"] = table
        return tables
