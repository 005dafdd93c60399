"""Why this token: attribution maps beside the attention (explorer.analysis.attribution, rollout,
attention_flow).

Rows are the output tokens, columns the source tokens then the target prefix. The map follows the
probe: a probe between runs (or of a scrubbed snapshot, which arrives as a new workspace) is
explained in the panel's job runner, cancellable, with progress; while training runs, the
training thread computes it between steps at most every few seconds (explain.LIVE_EVERY_S), and
only while this view is shown and following (attention flow, too slow for that, waits for a
pause). `RolloutPanel` is the same view on attention rollout (`explorer export --plots rollout`).
"""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
)

from explorer.analysis.attribution import (
    APP_SETTINGS,
    AttributionResult,
    AttributionSettings,
)
from explorer.analysis.explain import ExplainRequest, explain
from explorer.analysis.rollout import RolloutResult
from explorer.export.attribution import attribution_tables, column_labels
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.panels.base import Panel, elide
from explorer.ui.panels.stoppable import StoppableJob
from explorer.ui.progress_bar import FrameProgressBar

NO_MODEL = "Open or create a model: which input tokens each output token rests on is drawn here."
NO_RESULT = "No attribution yet: Explain (or a probe, with Follow the probe) computes it."
METHOD_LABELS = {
    "ig": "Integrated gradients",
    "saliency": "Saliency (gradient norm)",
    "grad-input": "Gradient × input",
    "occlusion": "Occlusion",
    "rollout": "Attention rollout",
    "flow": "Attention flow",
}
# the settings the panel opens with (what `explorer export --format csv` computes headless)
DEFAULTS = APP_SETTINGS
TO_TOLERANCE = 0  # the steps box's "to gap" value: the step count is found, not fixed
ATTENTION_METHODS = ("rollout", "flow")  # drawn on the attention-graph map, with a head fusion
METHOD_TIPS = {
    "ig": "Integrated gradients: the gradient averaged along a straight path from the baseline "
          "embeddings to the input's, times (input − baseline). Its sum should equal "
          "f(x) − f(baseline): the completeness gap shown below says how far it is.",
    "saliency": "‖∂f/∂e_j‖: how strongly f reacts to a small change of token j's embedding.",
    "grad-input": "Σ_d e_jd ∂f/∂e_jd: the first-order estimate of removing token j's embedding.",
    "occlusion": "f(x) − f(x with token j replaced by the baseline embedding): one forward pass "
                 "per source and prefix token.",
    "rollout": "Abnar & Zuidema's attention rollout: head-fused attention plus the residual "
               "identity, rows renormalised, multiplied through the layers.",
    "flow": "Abnar & Zuidema's attention flow: the same residual-added attention as a flow network "
            "through the layers; each cell is the maximum flow from that position at the top to that "
            "input token (rows normalised). One max-flow per pair of tokens: slower than rollout.",
}


class AttributionPanel(StoppableJob, Panel):
    PANEL_ID = "attribution"
    TITLE = "Attribution"
    TOOLTIP = ("Why each output token: how much every source token and every earlier target token "
               "contributes to its log-probability (rows: output tokens; columns: source, then "
               "the target prefix). Attention says where the model looked; this says what mattered.")
    DEFAULT_METHOD = "ig"

    progress_changed = Signal(float)  # emitted from the job's thread, drawn on the GUI thread

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.result: AttributionResult | RolloutResult | None = None
        self.stop_event = threading.Event()
        self.runner = self.job_runner("explain")

        self.method_box = QComboBox()
        for method, label in METHOD_LABELS.items():
            self.method_box.addItem(label, method)
            self.method_box.setItemData(self.method_box.count() - 1, METHOD_TIPS[method],
                                        Qt.ItemDataRole.ToolTipRole)
        self.method_box.setCurrentIndex(self.method_box.findData(self.DEFAULT_METHOD))
        self.method_box.setToolTip("What explains the output: gradients, occlusion or attention rollout")
        self.baseline_box = QComboBox()
        for name in ("pad", "zero", "unk"):
            self.baseline_box.addItem({"pad": "<pad> embedding", "zero": "zero embedding",
                                       "unk": "<unk> embedding"}[name], name)
        self.baseline_box.setCurrentIndex(self.baseline_box.findData(DEFAULTS.baseline))
        self.baseline_box.setToolTip("Integrated gradients' path start, and what occlusion puts in "
                                     "a token's place")
        self.steps_box = QSpinBox()
        self.steps_box.setRange(TO_TOLERANCE, 2000)
        self.steps_box.setSpecialValueText("to gap")
        self.steps_box.setValue(TO_TOLERANCE if DEFAULTS.tolerance is not None else DEFAULTS.steps)
        self.steps_box.setToolTip("Integrated gradients' interpolation steps: more steps, smaller "
                                  "completeness gap. \"to gap\": steps are added (every point kept) "
                                  "until each token's gap is within the tolerance beside it")
        self.tolerance_box = QDoubleSpinBox()
        self.tolerance_box.setRange(0.01, 50.0)
        self.tolerance_box.setDecimals(2)
        self.tolerance_box.setSuffix(" %")
        self.tolerance_box.setValue(100 * (DEFAULTS.tolerance or 0.01))
        self.tolerance_box.setToolTip("The completeness gap sought, as a share of |f(x) − f(baseline)| "
                                      f"(at most {DEFAULTS.max_steps} steps)")
        self.batch_box = QSpinBox()
        self.batch_box.setRange(1, 1024)
        self.batch_box.setValue(DEFAULTS.batch_size)
        self.batch_box.setToolTip("Interpolation steps per forward pass (Captum's internal_batch_size): "
                                  "memory grows with it")
        # contrastive: one of the model's most probable other tokens at the explained position
        # (the list), or any token typed
        self.contrast_box = QComboBox()
        self.contrast_box.setEditable(True)
        self.contrast_box.setMinimumWidth(110)
        self.contrast_box.lineEdit().setPlaceholderText("rather than… (a token)")
        self.contrast_box.setToolTip("Contrastive: explain log p(token) − log p(this token), e.g. why "
                                     "'dogs' rather than 'dog'. The list holds the model's most "
                                     "probable other tokens at the explained (picked or last) token")
        self.fusion_box = QComboBox()
        self.fusion_box.addItems(["mean", "max", "min"])
        self.fusion_box.setToolTip("Rollout and flow: how the heads of a layer are fused")
        self.map_box = QComboBox()
        self.map_box.setToolTip("Rollout and flow: which stack (rollout: or the decoder's path back to the source)")
        self.follow_box = QCheckBox("Follow the probe")
        self.follow_box.setChecked(True)
        self.follow_box.setToolTip("Recompute on every probe (every few seconds while training)")
        self.explain_button = QPushButton("Explain")
        self.explain_button.setToolTip("Compute the map for the probe input (Ctrl+Return)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the computation (Esc)")
        self.stop_button.setEnabled(False)
        self.progress = FrameProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(8)
        # an output token picked in step-through decoding, the beam tree or the compare panel
        self.pick = None
        self.pick_label = QLabel()
        self.pick_label.setToolTip("The output token explained: picked in another view")
        self.all_button = QPushButton("All tokens")
        self.all_button.setToolTip("Explain every output token of the probe again, not only the picked one")
        self.pick_label.hide()
        self.all_button.hide()
        self.status = QLabel("Open or create a model.")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setWordWrap(True)

        controls = QGridLayout()
        controls.addWidget(self.method_box, 0, 0, 1, 2)
        controls.addWidget(QLabel("Baseline"), 0, 2)
        controls.addWidget(self.baseline_box, 0, 3)
        controls.addWidget(QLabel("Steps"), 0, 4)
        controls.addWidget(self.steps_box, 0, 5)
        controls.addWidget(self.tolerance_box, 0, 6)
        controls.addWidget(QLabel("Batch"), 0, 7)
        controls.addWidget(self.batch_box, 0, 8)
        controls.addWidget(QLabel("Contrast"), 1, 0)
        controls.addWidget(self.contrast_box, 1, 1)
        controls.addWidget(QLabel("Heads"), 1, 2)
        controls.addWidget(self.fusion_box, 1, 3)
        controls.addWidget(self.map_box, 1, 4, 1, 2)
        controls.addWidget(self.follow_box, 1, 6, 1, 2)
        controls.addWidget(self.explain_button, 0, 9)
        controls.addWidget(self.stop_button, 1, 9)

        self.scores_map = HeatmapWidget("CET-D1", levels=None, symmetric=True,
                                        row_title="output token", col_title="source | prefix",
                                        value_name="attribution")
        self.rollout_map = HeatmapWidget("viridis", levels=(0.0, 1.0), row_title="position",
                                         col_title="input token", value_name="share")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.scores_map)
        self.stack.addWidget(self.rollout_map)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        pick_row = QHBoxLayout()
        pick_row.addWidget(self.pick_label, 1)
        pick_row.addWidget(self.all_button)
        layout.addLayout(pick_row)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self.view = EmptyState(self.stack, NO_MODEL)  # no empty heatmap before a result: why
        layout.addWidget(self.view, stretch=1)

        self.explain_button.clicked.connect(self.compute)
        self.stop_button.clicked.connect(self.stop)
        # panel-local keys: the window's own shortcuts (Ctrl+E: export all) stay the window's
        for keys, slot in (("Ctrl+Return", self.compute), ("Escape", self.stop)):
            QShortcut(QKeySequence(keys), self, slot, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.method_box.currentIndexChanged.connect(self._on_settings_changed)
        self.baseline_box.currentIndexChanged.connect(self._on_settings_changed)
        self.fusion_box.currentIndexChanged.connect(self._on_settings_changed)
        self.steps_box.editingFinished.connect(self._on_settings_changed)
        self.tolerance_box.editingFinished.connect(self._on_settings_changed)
        self.batch_box.editingFinished.connect(self._on_settings_changed)
        self.contrast_box.lineEdit().editingFinished.connect(self._on_settings_changed)
        self.contrast_box.activated.connect(lambda _index: self._on_settings_changed())
        self.all_button.clicked.connect(lambda: self._set_pick(None, compute=True))
        self.follow_box.toggled.connect(self._on_settings_changed)
        self.map_box.currentIndexChanged.connect(self._draw_rollout)
        self.progress_changed.connect(lambda fraction: self.progress.setValue(int(100 * fraction)))
        self.runner.done.connect(self._on_done)
        self.runner.failed.connect(self._on_failed)
        self.runner.busy_changed.connect(self._on_busy)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe.connect(self.show_snapshot)
        bus.probe_input_changed.connect(self._on_probe_input)
        bus.token_picked.connect(self._set_pick)
        install_export_menu(self)
        self._enable_controls()

    # -- what to compute ------------------------------------------------------------------------

    def request(self) -> ExplainRequest:
        contrast = self.contrast_box.currentText().strip() or None
        to_gap = self.steps_box.value() == TO_TOLERANCE
        settings = AttributionSettings(steps=DEFAULTS.steps if to_gap else self.steps_box.value(),
                                       tolerance=self.tolerance_box.value() / 100 if to_gap else None,
                                       baseline=self.baseline_box.currentData(),
                                       batch_size=self.batch_box.value(), contrast=contrast)
        rows = (self.pick.row,) if self.pick is not None else None
        return ExplainRequest(self.method_box.currentData(), settings, self.fusion_box.currentText(), rows)

    def _enable_controls(self) -> None:
        method = self.method_box.currentData()
        self.baseline_box.setEnabled(method in ("ig", "occlusion"))
        self.steps_box.setEnabled(method == "ig")
        self.tolerance_box.setEnabled(method == "ig" and self.steps_box.value() == TO_TOLERANCE)
        self.batch_box.setEnabled(method in ("ig", "occlusion"))
        self.contrast_box.setEnabled(method not in ATTENTION_METHODS)
        self.fusion_box.setEnabled(method in ATTENTION_METHODS)
        self.map_box.setEnabled(method in ATTENTION_METHODS)

    def _on_settings_changed(self) -> None:
        self._enable_controls()
        self._announce_live()
        if self.follow_box.isChecked():
            self.compute()

    def _announce_live(self) -> None:
        """Ask the training probe to explain too, only while this view is in sight and following
        (training pays nothing for a hidden view, nor for one behind another dock's tab)."""
        wanted = self.isVisible() and self.in_sight() and self.follow_box.isChecked() and self.workspace is not None
        self.bus.explanation_requested.emit(self.request() if wanted else None)

    def sight_changed(self, in_sight: bool) -> None:
        super().sight_changed(in_sight)
        if in_sight:
            self._announce_live()
        else:
            self.bus.explanation_requested.emit(None)

    # -- inputs ---------------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        if workspace is None:
            self.result = None
            self.status.setText("Open or create a model.")
            self.view.show_message(NO_MODEL)
            return
        if self.result is None:
            self.view.show_message(NO_RESULT)
        self._announce_live()

    def _on_probe_input(self, source: str, target: str) -> None:
        if self.pick is not None and (self.pick.source, self.pick.target) != (source, target):
            self._set_pick(None)  # another input: every output token again

    def _set_pick(self, pick, compute: bool = False) -> None:
        """Explain only this picked output token (None: all of them); the probe it comes with
        recomputes the map."""
        self.pick = pick
        self.pick_label.setVisible(pick is not None)
        self.all_button.setVisible(pick is not None)
        if pick is not None:
            self.pick_label.setText(f"Explaining {pick.token!r}, picked in {pick.origin}")
        self._announce_live()
        if compute and self.follow_box.isChecked():
            self.compute()

    def show_snapshot(self, snapshot) -> None:
        """A probe arrived: a training probe brings its explanation; otherwise compute one."""
        live = getattr(snapshot, "explanation", None)
        if live is not None:
            if live.result is not None:
                self.show_result(live.result, f"step {snapshot.step}")
            elif live.message:
                self.status.setText(live.message)
            return
        if self.follow_box.isChecked() and not self.training:
            self.compute()

    # -- computing ------------------------------------------------------------------------------

    def compute(self) -> None:
        """Explain the probe input with the current settings, in the panel's job runner."""
        source, target = self.probe_text
        if self.workspace is None or not (source or target) or self.training:
            return
        self.stop_event.set()  # a running computation of older settings stops at its next batch
        self.stop_event = threading.Event()
        self.progress.setValue(0)
        self.status.setText(f"{METHOD_LABELS[self.request().method]}: {elide(source)!r}…")
        if self.result is None:
            self.view.show_message("Explaining the probe input…")
        self.runner.submit(explain, self.workspace, source, target, self.request(),
                           self.progress_changed.emit, self.stop_event.is_set)

    def _on_done(self, _job: int, result) -> None:
        self.show_result(result, f"step {getattr(self.workspace, 'step', 0)}")

    def _on_failed(self, _job: int, message: str) -> None:
        self.status.setText(message)
        if self.result is None:
            self.view.show_message(message)

    # -- drawing --------------------------------------------------------------------------------

    def show_result(self, result, where: str) -> None:
        self.result = result
        self.view.set_message(None if self.has_content() else
                              getattr(result, "reason", "") or "Nothing to explain on this input.")
        if isinstance(result, RolloutResult):
            self.stack.setCurrentWidget(self.rollout_map)
            names = [m.name for m in result.maps]
            if [self.map_box.itemText(i) for i in range(self.map_box.count())] != names:
                self.map_box.blockSignals(True)
                self.map_box.clear()
                self.map_box.addItems(names)
                self.map_box.setCurrentIndex(max(0, len(names) - 1))  # the decoder's path first
                self.map_box.blockSignals(False)
            summary = (f"{where}: {METHOD_LABELS[result.method].lower()}, heads fused by {result.fusion}; "
                       f"each row sums to 1" + (f" ({result.note})" if result.note else ""))
            self.status.setText(result.reason or summary)
            self._draw_rollout()
            return
        self.stack.setCurrentWidget(self.scores_map)
        self._offer_contrasts(result)
        matrix = result.scores.astype(np.float32)
        self.scores_map.set_matrix(matrix, result.rows, column_labels(result))
        quantity = (f"log p(token) − log p({result.contrast!r})" if result.contrast else "log p(token)")
        self.scores_map.set_title(f"{METHOD_LABELS[result.method]} of {quantity}")
        self.status.setText(f"{where}: " + self._summary(result))
        self.status.setStyleSheet("color: #c0392b;" if result.warning else "")

    def _offer_contrasts(self, result: AttributionResult) -> None:
        """The contrast list: the model's most probable other tokens at the explained token (the
        picked one, else the last), the typed or chosen one kept."""
        if not result.alternatives:
            return
        chosen = self.contrast_box.currentText()
        self.contrast_box.blockSignals(True)
        self.contrast_box.clear()
        self.contrast_box.addItems(["", *result.alternatives[-1]])
        self.contrast_box.setCurrentText(chosen)
        self.contrast_box.blockSignals(False)

    @staticmethod
    def _summary(result: AttributionResult) -> str:
        if result.gap is None:
            return f"{METHOD_LABELS[result.method]}: rows are output tokens, › marks the target prefix"
        relative = result.relative_gap
        worst = int(relative.argmax())
        steps = f"{result.steps} steps"
        if result.tolerance is not None:
            low = int(result.row_steps.min())
            steps = f"{low}–{result.steps} steps" if low != result.steps else steps
            steps += f" to reach {100 * result.tolerance:g}%"
        text = (f"completeness gap Σattr − (f(x) − f(baseline)): at most {100 * relative[worst]:.2f}% "
                f"of |f(x) − f(baseline)| ({steps}, {result.baseline} baseline)")
        if not result.warning:
            return text
        return text + (f" — large at {result.rows[worst]!r}: use more steps" if result.tolerance is None
                       else f" — not reached at {result.rows[worst]!r}: {result.steps} steps is the cap")

    def _draw_rollout(self) -> None:
        if not isinstance(self.result, RolloutResult) or not self.result.maps:
            return
        chosen = self.result.maps[max(0, self.map_box.currentIndex())]
        self.rollout_map.set_matrix(chosen.matrix.astype(np.float32), chosen.rows, chosen.columns)
        self.rollout_map.set_title(f"{METHOD_LABELS[self.result.method].lower()}: {chosen.name}")

    # -- panel contract -------------------------------------------------------------------------

    def busy(self) -> bool:
        return super().busy() or self.bus.probing

    def has_content(self) -> bool:
        if isinstance(self.result, RolloutResult):
            return bool(self.result.maps)
        return self.result is not None

    def plot_items(self) -> dict[str, object]:
        if not self.has_content():  # no figure of an empty heatmap
            return {}
        heatmap = self.rollout_map if isinstance(self.result, RolloutResult) else self.scores_map
        return {"map": heatmap.ci}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return attribution_tables(self.result)

    def documents(self) -> dict[str, object]:
        return {} if self.result is None else {"result": self.result.to_dict()}


class RolloutPanel(AttributionPanel):
    """The attribution view on attention rollout (`explorer export --plots rollout`)."""

    PANEL_ID = "rollout"
    TITLE = "Attention rollout"
    TOOLTIP = ("Attention rollout (Abnar & Zuidema 2020): how much each input token reaches each "
               "position through the layers, residual connections included")
    DEFAULT_METHOD = "rollout"
