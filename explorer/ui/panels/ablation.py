"""Interventions on the probe (explorer.analysis.interventions): which heads matter, what ablating
them does, and activation patching from a clean into a corrupted input.

The layer × head map is the drop in the probe's output log-probability when each head alone is
ablated (Michel et al., 2019), or the change in validation loss or BLEU with each head ablated
(head_importance_data; a run with progress, stoppable). Ablated means zeroed, or set to the head's
mean output over the validation data (ablation_means, computed once per weights in the job). Clicking a cell adds that head to the ablation set (again: removes
it); the panel then shows each output token's log-probability with and without the set, and how
far the attention maps moved. The weights are never changed: Undo clears the set. With a corrupted
input of the same length, "Patch" draws the recovered logit difference, layer × position.

A recurrent model has no heads: the panel ablates the hidden units typed for a layer and direction
(an RNN state point, "3, 7, 10-12", or the Hidden panel's selection), and draws each output
token's log-probability with and without them, beside how far the attention moved.
"""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
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
)

from explorer.analysis.ablation_means import validation_means
from explorer.analysis.head_importance_data import head_importance_on_data
from explorer.analysis.interventions import (
    AblationEffect,
    HeadImportance,
    PatchingResult,
    ablation_effect,
    activation_patching,
    format_units,
    head_importance,
    parse_units,
    unit_point_label,
)
from explorer.errors import UserError
from explorer.export.tables import matrix_table
from explorer.families import family_of
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.panels.base import Panel
from explorer.ui.panels.decoding_widgets import show_text
from explorer.ui.panels.stoppable import StoppableJob
from explorer.ui.progress_bar import FrameProgressBar

NO_MODEL = ("Open or create a model: for a Transformer, how much each attention head matters; for an "
            "RNN, the output's log-probability with the hidden units you choose ablated.")
DATA_EXAMPLES = 32  # validation examples each head's loss or BLEU (and its mean output) is measured on
ABLATION_LABELS = {"zero": "zero", "mean": "mean over validation data"}


class AblationPanel(StoppableJob, Panel):
    PANEL_ID = "ablation"
    TITLE = "Ablation"
    TOOLTIP = ("Head importance: how much the probe's output log-probability drops when each head "
               "alone is ablated. Click heads to ablate them together; Undo restores the model.")

    progress_changed = Signal(float)  # emitted from the job's thread, drawn on the GUI thread

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.importance: HeadImportance | None = None
        self.effect: AblationEffect | None = None
        self.patching: PatchingResult | None = None
        self.chosen: set[tuple[int, int]] = set()  # (layer, head) in the ablation set
        self.units: dict[str, list[int]] = {}  # RNN state point -> its units in the ablation set
        self.unit_counts: dict[str, int] = {}  # each RNN state point's number of units
        self.recurrent = False
        self.hidden_selection: tuple[str, list[int]] | None = None  # the Hidden panel's last one
        self.runner = self.job_runner("interventions")

        self.mode_box = QComboBox()
        for mode, label in ABLATION_LABELS.items():
            self.mode_box.addItem(label, mode)
        self.mode_box.setToolTip("Ablation: set the head's output to zero, or to its mean output over "
                                 f"(up to {DATA_EXAMPLES}) validation examples, every position counted")
        # what a head's importance is measured on (Michel et al. 2019: loss and BLEU on held-out data)
        self.metric_box = QComboBox()
        self.metric_box.addItem("probe log p", "probe")
        self.metric_box.addItem("validation loss", "loss")
        self.metric_box.addItem("validation BLEU", "bleu")
        self.metric_box.setToolTip("Head importance: the drop in the probe's log-probability, or the "
                                   f"change in validation loss or BLEU (greedy decodes of up to "
                                   f"{DATA_EXAMPLES} validation examples, each head ablated in turn)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the head-importance run (Esc)")
        self.stop_button.setEnabled(False)
        self.progress = FrameProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(8)
        self.stop_event = threading.Event()
        self.undo_button = QPushButton("Undo")
        self.undo_button.setToolTip("Clear the ablation set: the model as it was (Ctrl+Z)")
        self.corrupted_edit = QLineEdit()
        self.corrupted_edit.setPlaceholderText("corrupted input, same length in tokens")
        self.corrupted_edit.setToolTip("Activation patching: the clean input is the probe; this "
                                       "input differs in a few tokens")
        self.patch_button = QPushButton("Patch")
        self.patch_button.setToolTip("Patch each layer's residual stream at each position from the "
                                     "clean run into the corrupted one")
        self.status = QLabel("Open a Transformer to see its heads.")
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.point_box = QComboBox()
        self.point_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)  # "encoder layer 1 backward"
        self.point_box.setToolTip("The RNN layer and direction whose hidden units (h_t) are ablated")
        self.units_edit = QLineEdit()
        self.units_edit.setPlaceholderText("units, e.g. 3, 7, 10-12")
        self.units_edit.setToolTip("Hidden units to ablate in that layer, numbered from 0 as in the "
                                   "Hidden panel; empty: none there")
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Ablate these units at every step (Enter)")
        self.from_hidden_button = QPushButton("From Hidden")
        self.from_hidden_button.setToolTip("Take the units selected in the Hidden panel (drag across "
                                           "its tokens first)")
        self.from_hidden_button.setEnabled(False)
        importance_label = QLabel("Importance on")
        controls = QGridLayout()
        controls.addWidget(QLabel("Ablation"), 0, 0)
        controls.addWidget(self.mode_box, 0, 1)
        controls.addWidget(self.undo_button, 0, 2)
        controls.addWidget(importance_label, 0, 3)
        controls.addWidget(self.metric_box, 0, 4)
        controls.addWidget(self.stop_button, 0, 5)
        controls.addWidget(self.corrupted_edit, 1, 0, 1, 2)
        controls.addWidget(self.patch_button, 1, 2)
        units_row = QHBoxLayout()
        for widget in (self.point_box, self.units_edit, self.apply_button, self.from_hidden_button):
            units_row.addWidget(widget)
        controls.addLayout(units_row, 2, 0, 1, 6)
        self.head_controls = [importance_label, self.metric_box, self.stop_button, self.corrupted_edit,
                              self.patch_button]
        self.unit_controls = [self.point_box, self.units_edit, self.apply_button, self.from_hidden_button]
        self.importance_map = HeatmapWidget("CET-D1", levels=None, symmetric=True, row_title="layer",
                                            col_title="head", value_name="drop in log p")
        self.patching_map = HeatmapWidget("CET-D1", levels=None, symmetric=True, row_title="layer",
                                          col_title="position", value_name="recovered")
        self.effect_map = HeatmapWidget("viridis", levels=None, row_title="", col_title="output",
                                        value_name="log p")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.importance_map)
        self.stack.addWidget(self.patching_map)
        self.stack.addWidget(self.effect_map)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self.view = EmptyState(self.stack, NO_MODEL)  # no empty heatmap before a result: why
        layout.addWidget(self.view, stretch=1)

        self.mode_box.currentIndexChanged.connect(self.compute)
        self.metric_box.currentIndexChanged.connect(self.compute)
        self.stop_button.clicked.connect(self.stop)
        QShortcut(QKeySequence("Escape"), self, self.stop, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.progress_changed.connect(lambda fraction: self.progress.setValue(int(100 * fraction)))
        self.runner.busy_changed.connect(self._on_busy)
        self.undo_button.clicked.connect(self.undo)
        self.patch_button.clicked.connect(self.patch)
        self.corrupted_edit.returnPressed.connect(self.patch)
        self.apply_button.clicked.connect(self.apply_units)
        self.units_edit.returnPressed.connect(self.apply_units)
        self.point_box.currentIndexChanged.connect(self._show_point_units)
        self.from_hidden_button.clicked.connect(self.take_hidden_selection)
        QShortcut(QKeySequence.StandardKey.Undo, self, self.undo,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)  # the panel's own Ctrl+Z
        self.importance_map.scene().sigMouseClicked.connect(self._on_click)
        self.runner.done.connect(self._on_done)
        self.runner.failed.connect(self._on_failed)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe.connect(self._on_probe)
        bus.units_selected.connect(self._on_units_selected)
        install_export_menu(self)
        self._show_controls()

    def set_workspace(self, workspace) -> None:
        self.chosen.clear()
        self.units.clear()
        self.unit_counts.clear()
        self.point_box.clear()
        self.units_edit.clear()
        recurrent = workspace is not None and family_of(workspace.model).recurrent
        kind_changed, self.recurrent = recurrent != self.recurrent, recurrent
        self._show_controls()
        if workspace is None:
            self.view.show_message(NO_MODEL)
        elif self.view.empty or kind_changed:  # the other kind's result would not fit the model
            self.importance = self.effect = self.patching = None
            self.view.show_message("Waiting for the probe: then choose hidden units to ablate."
                                   if self.recurrent else
                                   "Waiting for the probe: each head is then ablated in turn.")

    def _show_controls(self) -> None:
        """Heads (importance, patching) for a Transformer; units for an RNN."""
        for widget in self.head_controls:
            widget.setVisible(not self.recurrent)
        for widget in self.unit_controls:
            widget.setVisible(self.recurrent)

    def _on_failed(self, _job: int, message: str) -> None:
        self.status.setText(message)
        if self.view.empty:
            self.view.show_message(message)

    def _say_while_empty(self, text: str) -> None:
        self.status.setText(text)
        if self.view.empty:
            self.view.show_message(text)

    def _on_probe(self, _snapshot) -> None:
        if not self.training:  # the model belongs to the training thread meanwhile
            self.compute()

    def compute(self) -> None:
        source, target = self.probe_text
        if self.workspace is None or not (source or target) or self.training:
            return
        self.stop_event.set()  # an older run stops at its next head
        self.stop_event = threading.Event()
        if self.recurrent:
            self._submit_units()
            return
        metric, mode = self.metric_box.currentData(), self.mode_box.currentData()
        if metric == "probe":
            self._say_while_empty("Ablating each head…")
            self.runner.submit(_importance_on_probe, self.workspace, source, target, mode, DATA_EXAMPLES,
                               self.progress_changed.emit)
            return
        self._say_while_empty(f"Evaluating with each head ablated ({self.metric_box.currentText()})…")
        self.runner.submit(head_importance_on_data, self.workspace, metric, DATA_EXAMPLES,
                           self.progress_changed.emit, self.stop_event.is_set, mode)

    def _heads(self) -> dict[str, list[int]]:
        heads: dict[str, list[int]] = {}
        for layer, head in sorted(self.chosen):
            heads.setdefault(self.importance.points[layer], []).append(head)
        return heads

    def _on_click(self, event) -> None:
        cell = self.importance_map.cell_at(event.scenePos())
        if cell is None or self.importance is None or np.isnan(self.importance.drop[cell]):
            return
        self.chosen ^= {cell}
        self.ablate()

    def ablate(self) -> None:
        source, target = self.probe_text
        if self.workspace is None or self.importance is None or self.training:
            return
        if not self.chosen:
            self.effect = None
            self._draw_importance()
            return
        self.runner.submit(_effect, self.workspace, source, target, self._heads(),
                           self.mode_box.currentData(), DATA_EXAMPLES)

    def apply_units(self) -> None:
        """The typed units become the chosen layer's ablation set; a bad list is one line in the
        status and changes nothing."""
        point = self.point_box.currentData()
        if point is None or self.workspace is None or self.training:
            return
        try:
            units = parse_units(self.units_edit.text(), self.unit_counts[point])
        except UserError as exc:
            self.status.setText(str(exc))
            return
        if units:
            self.units[point] = units
        else:
            self.units.pop(point, None)
        self._submit_units()

    def _submit_units(self) -> None:
        source, target = self.probe_text
        if self.workspace is None or not (source or target) or self.training:
            return
        # nothing ablated: the clean pass only (no validation means needed)
        mode = self.mode_box.currentData() if self.units else "zero"
        self.runner.submit(_effect, self.workspace, source, target, None, mode, DATA_EXAMPLES,
                           dict(self.units))

    def _show_point_units(self) -> None:
        point = self.point_box.currentData()
        show_text(self.units_edit, format_units(self.units.get(point, [])))

    def _on_units_selected(self, selection) -> None:
        """The Hidden panel selected units (point, units): offered by "From Hidden"."""
        self.hidden_selection = selection
        self.from_hidden_button.setEnabled(selection is not None)

    def take_hidden_selection(self) -> None:
        if self.hidden_selection is None:
            return
        point, units = self.hidden_selection
        index = self.point_box.findData(point)
        if index < 0:
            self.status.setText("The Hidden panel's selection is not in a hidden state of this model.")
            return
        self.point_box.setCurrentIndex(index)
        show_text(self.units_edit, format_units(units))
        self.apply_units()

    def undo(self) -> None:
        self.chosen.clear()
        if self.recurrent:
            self.units.clear()
            self.units_edit.clear()
            self._submit_units()
            return
        self.ablate()

    def patch(self) -> None:
        source, target = self.probe_text
        corrupted = self.corrupted_edit.text()
        if self.workspace is None or not corrupted or self.training:
            return
        self._say_while_empty("Patching every layer at every position…")
        self.runner.submit(activation_patching, self.workspace, source, corrupted, target)

    def _on_done(self, _job: int, result) -> None:
        self.view.show_view()
        if isinstance(result, HeadImportance):
            self.importance, self.effect = result, None
            self.chosen = {c for c in self.chosen if c[0] < len(result.layers)}
            self.stack.setCurrentWidget(self.importance_map)
            self._draw_importance()
        elif isinstance(result, AblationEffect) and self.recurrent:
            self.effect = result
            self._draw_unit_effect()
        elif isinstance(result, AblationEffect) and self.importance is not None:
            self.effect = result
            self._draw_importance()
        elif isinstance(result, AblationEffect):  # its map was cleared meanwhile (a new model)
            self.effect = None
        elif isinstance(result, PatchingResult):
            self.patching = result
            self.stack.setCurrentWidget(self.patching_map)
            self.patching_map.set_matrix(result.recovered, result.layers, result.positions)
            self.patching_map.set_title(f"recovered logit difference {result.answer!r} − "
                                        f"{result.alternative!r}")
            self.status.setText(f"clean {result.clean_difference:+.3f}, corrupted "
                                f"{result.corrupted_difference:+.3f}: 1 = fully recovered by that patch")

    def _draw_importance(self) -> None:
        result = self.importance
        labels = [f"head {h + 1}" for h in range(result.heads)]
        self.importance_map.set_matrix(result.drop, result.layers, labels)
        marked = ", ".join(f"{result.layers[layer]} head {head + 1}" for layer, head in sorted(self.chosen))
        self.importance_map.set_title(f"{result.quantity} when one head is ablated "
                                      f"({ABLATION_LABELS.get(result.mode, result.mode)})")
        if self.effect is None:
            self.status.setText("Click heads to ablate them together." if not self.chosen else "")
            return
        effect = self.effect
        moved = max(effect.attention_change.values(), default=0.0)
        self.status.setText(f"ablated {marked}: log p {effect.clean.sum():.3f} → {effect.ablated.sum():.3f}; "
                            f"attention moved up to {moved:.3f}")

    def _draw_unit_effect(self) -> None:
        effect = self.effect
        if not self.unit_counts:  # the first result lists the model's RNN state points
            self.unit_counts = dict(effect.unit_points)
            for point in self.unit_counts:
                self.point_box.addItem(unit_point_label(point), point)
        self.stack.setCurrentWidget(self.effect_map)
        self.effect_map.set_matrix(np.stack([effect.clean, effect.ablated]), ["log p", "ablated"],
                                   effect.rows)
        self.effect_map.set_title("log p of each output token, with and without the ablated units")
        if not self.units:
            self.status.setText("Type units for a layer and Apply to ablate them.")
            return
        marked = "; ".join(f"{unit_point_label(point)} units {format_units(units)}"
                           for point, units in self.units.items())
        moved = max(effect.attention_change.values(), default=None)
        attention = "" if moved is None else f"; attention moved up to {moved:.3f}"
        self.status.setText(f"ablated {marked} ({ABLATION_LABELS[self.mode_box.currentData()]}): "
                            f"log p {effect.clean.sum():.3f} → {effect.ablated.sum():.3f}{attention}")

    # -- panel contract -------------------------------------------------------------------------

    def busy(self) -> bool:
        return super().busy() or self.bus.probing

    def has_content(self) -> bool:
        return self.importance is not None or (self.recurrent and self.effect is not None)

    def plot_items(self) -> dict[str, object]:
        items = {"importance": self.importance_map.ci} if self.importance is not None else {}
        if self.recurrent and self.effect is not None:
            items["units"] = self.effect_map.ci
        if self.patching is not None:
            items["patching"] = self.patching_map.ci
        return items

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        tables = {}
        if self.importance is not None:
            tables["importance"] = matrix_table(self.importance.drop, self.importance.layers,
                                                [f"head {h + 1}" for h in range(self.importance.heads)],
                                                "layer \\ head")
        if self.effect is not None:
            tables["ablated"] = (["output", "log p", "log p ablated"],
                                 [[r, c, a] for r, c, a in zip(self.effect.rows, self.effect.clean,
                                                               self.effect.ablated)])
        if self.patching is not None:
            tables["patching"] = matrix_table(self.patching.recovered, self.patching.layers,
                                              self.patching.positions, "layer \\ position")
        return tables


def _means(workspace, mode: str, examples: int):
    """Mean ablation's values over the validation data (cached per weights); None for zero."""
    return validation_means(workspace, examples) if mode == "mean" else None


def _importance_on_probe(workspace, source, target, mode, examples, progress):
    return head_importance(workspace, source, target, mode, _means(workspace, mode, examples), progress)


def _effect(workspace, source, target, heads, mode, examples, units=None):
    return ablation_effect(workspace, source, target, heads=heads, units=units, mode=mode,
                           means=_means(workspace, mode, examples))
