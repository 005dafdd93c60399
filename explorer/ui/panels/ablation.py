"""Interventions on the probe (explorer.analysis.interventions): which heads matter, what ablating
them does, and activation patching from a clean into a corrupted input.

The layer × head map is the drop in the probe's output log-probability when each head alone is
ablated (Michel et al., 2019), or the change in validation loss or BLEU with each head ablated
(head_importance_data; a run with progress, stoppable). Ablated means zeroed, or set to the head's
mean output over the validation data (ablation_means, computed once per weights in the job). Clicking a cell adds that head to the ablation set (again: removes
it); the panel then shows each output token's log-probability with and without the set, and how
far the attention maps moved. The weights are never changed: Undo clears the set. With a corrupted
input of the same length, "Patch" draws the recovered logit difference, layer × position.
"""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
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
    head_importance,
)
from explorer.export.tables import matrix_table
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.panels.base import Panel
from explorer.ui.panels.stoppable import StoppableJob

NO_MODEL = "Open or create a Transformer: how much each attention head matters is drawn here."
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
        self.progress = QProgressBar()
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
        controls = QGridLayout()
        controls.addWidget(QLabel("Ablation"), 0, 0)
        controls.addWidget(self.mode_box, 0, 1)
        controls.addWidget(self.undo_button, 0, 2)
        controls.addWidget(QLabel("Importance on"), 0, 3)
        controls.addWidget(self.metric_box, 0, 4)
        controls.addWidget(self.stop_button, 0, 5)
        controls.addWidget(self.corrupted_edit, 1, 0, 1, 2)
        controls.addWidget(self.patch_button, 1, 2)
        self.importance_map = HeatmapWidget("CET-D1", levels=None, symmetric=True, row_title="layer",
                                            col_title="head", value_name="drop in log p")
        self.patching_map = HeatmapWidget("CET-D1", levels=None, symmetric=True, row_title="layer",
                                          col_title="position", value_name="recovered")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.importance_map)
        self.stack.addWidget(self.patching_map)
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
        QShortcut(QKeySequence.StandardKey.Undo, self, self.undo,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)  # the panel's own Ctrl+Z
        self.importance_map.scene().sigMouseClicked.connect(self._on_click)
        self.runner.done.connect(self._on_done)
        self.runner.failed.connect(self._on_failed)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe.connect(self._on_probe)
        install_export_menu(self)

    def set_workspace(self, workspace) -> None:
        self.chosen.clear()
        if workspace is None:
            self.view.show_message(NO_MODEL)
        elif self.view.empty:
            self.view.show_message("Waiting for the probe: each head is then ablated in turn.")

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

    def undo(self) -> None:
        self.chosen.clear()
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
        elif isinstance(result, AblationEffect):
            self.effect = result
            self._draw_importance()
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

    # -- panel contract -------------------------------------------------------------------------

    def busy(self) -> bool:
        return super().busy() or self.bus.probing

    def has_content(self) -> bool:
        return self.importance is not None

    def plot_items(self) -> dict[str, object]:
        items = {"importance": self.importance_map.ci} if self.importance is not None else {}
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


def _effect(workspace, source, target, heads, mode, examples):
    return ablation_effect(workspace, source, target, heads=heads, mode=mode,
                           means=_means(workspace, mode, examples))
