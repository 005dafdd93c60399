"""Gradient flow: ||dL/dh_t|| through time on the probe input (live), its history over training,
every registered cell side by side, the global norm against the clipping threshold τ, a scalar playground
for the notes' a_h^k, and for Transformers the gradient norm per layer (depth).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
)
from superqt import QLabeledDoubleSlider
from superqt.utils import qthrottled

from explorer.analysis.gradients import (
    CELL_HIDDEN,
    DEPTH,
    LOG_FLOOR,
    PLAYGROUND_A_H,
    GradientHistory,
    cell_comparison_ids,
    depth_labels,
    format_gradient,
    scalar_recurrence_gradient,
)
from explorer.analysis.labels import stack_layer_label
from explorer.events import ProbeSnapshot
from explorer.export.gradients import GradientView, gradient_tables, recorded_norms
from explorer.families import family_of
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.heatmap import HeatmapWidget, label_font
from explorer.ui.live_plots import SECONDARY_REDRAW_INTERVAL_MS, GrowingBuffer
from explorer.ui.panels.base import Panel, elide
from explorer.ui.panels.param_gradients import ParamGradientCurve
from explorer.ui.plot_style import (
    ReadableAxis,
    SteadyViewBox,
    TokenAxis,
    ViewPages,
    add_legend,
    theme_grey,
)
from seqmodels.cells import cells

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
def _log_plot(title: str, x: str, y: str, legend: bool = False, token_x: bool = False,
              live: bool = False):
    """A plot with a logarithmic y axis: gradients span many orders of magnitude. Its legend, if
    any, sits under the plot: these curves fill every corner of it. A `live` plot grows while
    training runs, so its range moves in steps (SteadyViewBox)."""
    bottom = TokenAxis("bottom") if token_x else ReadableAxis("bottom")
    widget = pg.PlotWidget(axisItems={"left": ReadableAxis("left"), "bottom": bottom},
                           viewBox=SteadyViewBox() if live else None)
    plot = widget.getPlotItem()
    plot.setTitle(title, size="11pt")
    plot.setLabel("bottom", x)
    plot.setLabel("left", y)
    plot.setLogMode(y=True)
    plot.showGrid(x=True, y=True, alpha=0.25)
    for side in ("left", "bottom"):
        plot.getAxis(side).setTickFont(label_font(10))
    # room for "10⁻²⁰" or "0.00462" beside the axis title: a label that does not fit is dropped,
    # and a narrower axis drew its title over the numbers
    metrics = QFontMetrics(label_font(10))
    plot.getAxis("left").setWidth(metrics.horizontalAdvance("0.00000") + metrics.height() + 14)
    if legend:
        add_legend(plot, below=True)
    return widget, plot


class GradientFlowPanel(Panel):
    PANEL_ID = "gradients"
    TITLE = "Gradient flow"
    TOOLTIP = (
        "How far the loss's gradient reaches back: ||∂L/∂h_t|| for every time step on the probe "
        "input, its history over training, every registered cell side by side, clipping to τ, and a_h^k."
    )

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.snapshot: ProbeSnapshot | None = None
        self._history_names: list[str] = []  # the layers the gradient history holds
        self.grad_history = GradientHistory()
        self.cell_curves: dict[str, np.ndarray] = {}
        self.norms = GrowingBuffer(3)  # step, norm before, norm after clipping
        self._norms_stale = False  # norms arrived while the clipping plot was out of sight
        self.clip: float | None = None
        self.playground_derivative = np.ones(1)
        self.cell_jobs = self.job_runner("cells")
        self.cell_jobs.done.connect(lambda _job, curves: self.show_cell_curves(curves))
        self.cell_jobs.failed.connect(lambda _job, message: self.views["cells"].show_message(
            f"The cell comparison failed: {message}"))

        self.layer_box = QComboBox()
        self.layer_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.layer_box.setToolTip(
            "the layer whose history is drawn as training step × time step (a Transformer: × block)")
        self.compare_button = QPushButton("Compare cells")
        self.compare_button.setToolTip("RNN, UGRNN, GRU and LSTM: same size, same tokens")
        self.slider = QLabeledDoubleSlider(Qt.Horizontal)
        self.slider.setRange(*PLAYGROUND_A_H[:2])
        self.slider.setDecimals(3)
        self.slider.setValue(PLAYGROUND_A_H[2])
        self.tanh_box = QCheckBox("tanh")
        self.playground_value = QLabel()
        big = self.playground_value.font()
        big.setPointSize(big.pointSize() + 3)
        big.setBold(True)
        self.playground_value.setFont(big)
        self.status = QLabel("Open a model: the probe input's gradients appear here.")
        self.status.setWordWrap(True)

        controls = QHBoxLayout()
        controls.addWidget(QLabel("history of"))
        controls.addWidget(self.layer_box)
        controls.addWidget(self.compare_button)
        controls.addSpacing(20)
        controls.addWidget(QLabel("playground a_h"))
        controls.addWidget(self.slider, stretch=1)
        controls.addWidget(self.tanh_box)
        controls.addWidget(self.playground_value)

        time_view, self.time_plot = _log_plot(
            "‖∂L/∂h_t‖ through time (probe input)", "time step t", "‖∂L/∂h_t‖", legend=True,
            token_x=True)
        self.time_curves: dict[str, pg.PlotDataItem] = {}
        cells_view, self.cells_plot = _log_plot(
            "cells, same size and data: ‖∂ℓ_T/∂h_t‖", "time step t", "‖∂ℓ_T/∂h_t‖", legend=True)
        self.cell_items: dict[str, pg.PlotDataItem] = {}  # made as cells arrive (seqmodels.cells)
        depth_view, self.depth_plot = _log_plot(
            "‖∂L/∂(block output)‖ by depth", "layer (block)", "‖∂L/∂x‖", token_x=True)
        self.depth_curve = self.depth_plot.plot(
            [], [], pen=pg.mkPen(COLOURS[0], width=2), symbol="o", symbolBrush=COLOURS[0])
        params_view, params_plot = _log_plot(
            "‖∂L/∂θ‖ of each layer's parameters (probe input)", "layer", "‖∂L/∂θ‖", token_x=True)
        self.param_curve = ParamGradientCurve(params_plot)
        clip_view, self.clip_plot = _log_plot("global gradient norm and clipping τ", "step",
                                              "‖g‖", legend=True, live=True)
        self.clip_plot.setDownsampling(auto=True, mode="peak")
        self.clip_plot.setClipToView(True)
        self.before_curve = self.clip_plot.plot([], [], pen=pg.mkPen(COLOURS[1], width=1.5),
                                                name="before clipping")
        self.after_curve = self.clip_plot.plot([], [], pen=pg.mkPen(COLOURS[0], width=1.5),
                                               name="after clipping")
        # grey reads on light and dark themes alike; "#dddddd" vanished on a light background
        self.tau_line = pg.InfiniteLine(
            angle=0, pen=pg.mkPen(theme_grey(), width=2, style=Qt.DashLine), label="τ",
            labelOpts={"position": 0.5, "color": theme_grey(), "anchors": [(0.5, 1), (0.5, 1)]})
        self.clip_plot.addItem(self.tau_line)
        self.tau_line.setVisible(False)
        playground_view, self.playground_plot = _log_plot("playground: h_t = a_h·h_(t−1)", "k",
                                                          "|∂h_k/∂h_0|")
        self.playground_curve = self.playground_plot.plot([], [], pen=pg.mkPen(COLOURS[2], width=2))
        self.history = HeatmapWidget(
            "inferno", levels=None, row_title="training step", col_title="time step t",
            title="log10 ‖∂L/∂h_t‖ over training", value_name="log10 ‖∂L/∂h_t‖")

        # each view in its EmptyState: with nothing to draw it says why instead of empty axes
        self.views = {name: EmptyState(view) for name, view in (
            ("through_time", time_view), ("cells", cells_view), ("history", self.history),
            ("clipping", clip_view), ("playground", playground_view), ("depth", depth_view),
            ("params", params_view))}
        views = self.views
        # two views a page, each large enough to read; the depth plot takes the time plot's
        # place for Transformers
        self.pages = ViewPages()
        self.pages.add_page("Through time and history", (views["through_time"], views["depth"]),
                            views["history"])
        self.pages.add_page("Cells and the aₕ playground", views["cells"], views["playground"])
        self.clip_page = self.pages.add_page("Clipping", views["clipping"])
        self.pages.add_page("Parameters by layer", views["params"])
        self.pages.tabs.currentChanged.connect(self._draw_norms_if_stale)
        self._show_views(transformer=False)
        outer = QVBoxLayout(self)
        outer.addLayout(controls)
        outer.addWidget(self.status)
        outer.addWidget(self.pages, stretch=1)

        self.layer_box.currentIndexChanged.connect(self._draw_history)
        self.compare_button.clicked.connect(self.compare_cells)
        self.slider.valueChanged.connect(self._draw_playground)
        self.tanh_box.toggled.connect(self._draw_playground)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe.connect(self.show_snapshot)
        bus.probe_input_changed.connect(self._on_probe_input)
        bus.probe_failed.connect(self._on_probe_failed)
        bus.step_metrics.connect(self.add_step_metrics)
        if hasattr(bus, "train_config_changed"):
            bus.train_config_changed.connect(self._on_train_config)
        if hasattr(bus, "training_state"):
            bus.training_state.connect(self._on_training_state)
        install_export_menu(self)
        self._draw_playground()
        self._show_empty_states()

    # -- workspace and probes -------------------------------------------------------------------

    def _show_views(self, transformer: bool) -> None:
        """Time-step plots for recurrent models, the depth plot for Transformers."""
        self.views["depth"].setVisible(transformer)
        self.views["through_time"].setVisible(not transformer)

    def set_workspace(self, workspace) -> None:
        config = getattr(getattr(workspace, "model", None), "config", None)
        self._show_views(transformer=config is not None and not family_of(config).recurrent)
        self.snapshot = None
        self.grad_history.clear()
        if not self.bus.state.same_model:  # another model: its recorded norms, not the last one's
            self.norms.clear()
            recorded = recorded_norms(getattr(workspace, "history", None))
            if len(recorded):
                self.norms.extend(recorded)
        self.layer_box.clear()
        self._update_norms()
        self.cell_curves = {}
        for item in self.cell_items.values():
            item.setData([], [])
        self._on_train_config(getattr(workspace, "train_config", None))
        self._show_empty_states()

    def _on_probe_input(self, source: str, target: str) -> None:
        """The Prober probes a new input: compare the cells on it too."""
        if self.bus.workspace is not None:
            self.status.setText("Probing…")
            self.compare_cells()

    def show_snapshot(self, snapshot: ProbeSnapshot) -> None:
        self.snapshot = snapshot
        self._history_names = self.grad_history.add(snapshot)  # out of sight too: it is history
        if not self.held_until_shown(self._draw_snapshot):
            self._draw_snapshot()

    def _draw_snapshot(self) -> None:
        snapshot = self.snapshot
        if snapshot is None:  # another model came while the panel was out of sight
            return
        if snapshot.grad_time:
            self._draw_time(snapshot)
        if snapshot.grad_depth is not None and len(snapshot.grad_depth):
            labels = snapshot.grad_depth_labels
            self.depth_curve.setData(np.arange(len(labels)), np.maximum(snapshot.grad_depth, LOG_FLOOR))
            self.depth_plot.getAxis("bottom").set_labels(depth_labels(snapshot))
            self.depth_plot.setXRange(-0.5, len(labels) - 0.5, padding=0)
        self.param_curve.show(snapshot)
        self._show_history(self._history_names)
        where = f"step {snapshot.step}, probe {elide(snapshot.source)!r}"
        depth_note = "" if snapshot.grad_time else (
            ". A Transformer has no recurrence, so no gradient through time steps: the depth plot "
            "shows ‖∂L/∂x‖ per block, and 'Parameters by layer' ‖∂L/∂θ‖ per layer")
        self.status.setText(where + depth_note)
        self._show_empty_states()

    def _draw_time(self, snapshot: ProbeSnapshot) -> None:
        for name, norms in snapshot.grad_time.items():
            if name not in self.time_curves:
                pen = pg.mkPen(COLOURS[len(self.time_curves) % len(COLOURS)], width=2)
                self.time_curves[name] = self.time_plot.plot([], [], pen=pen,
                                                             name=stack_layer_label(name))
            self.time_curves[name].setData(np.arange(len(norms)), np.maximum(norms, LOG_FLOOR))
        for name, curve in self.time_curves.items():
            if name not in snapshot.grad_time:
                curve.setData([], [])
        length = max(len(v) for v in snapshot.grad_time.values())
        self.time_plot.setXRange(-0.5, length - 0.5, padding=0)

    def _show_history(self, names: list[str]) -> None:
        if not names:
            return
        if [self.layer_box.itemData(i) for i in range(self.layer_box.count())] != names:
            self.layer_box.blockSignals(True)
            self.layer_box.clear()
            for name in names:  # the model's name as data, "encoder layer 1" for people
                self.layer_box.addItem(stack_layer_label(name), name)
            self.layer_box.blockSignals(False)
        self._draw_history()

    def _label_time_axis(self) -> None:
        """Token labels of the chosen layer (encoder and decoder read different tokens)."""
        name = self.layer_box.currentData()
        labels = self.snapshot.grad_time_labels.get(name, []) if self.snapshot else []
        self.time_plot.getAxis("bottom").set_labels(labels)
        shown = self.layer_box.currentText()
        title = f"time step t (tokens of {shown})" if labels else "time step t"
        self.time_plot.setLabel("bottom", title)

    def history_matrix(self) -> np.ndarray | None:
        """(probes, time steps or blocks) of the chosen layer, log10 of the gradient norm."""
        return self.grad_history.matrix(self.layer_box.currentData())

    def _draw_history(self) -> None:
        self._label_time_axis()
        matrix = self.history_matrix()
        if matrix is None:
            return
        name = self.layer_box.currentData()
        self.history.set_matrix(matrix, [str(s) for s in self.grad_history.steps],
                                self.grad_history.labels[name])
        if name == DEPTH:
            self.history.set_title("log10 ‖∂L/∂x‖ per block, over training")
            self.history.set_axis_titles("training step", "layer (block)")
        else:
            self.history.set_title(f"log10 ‖∂L/∂h_t‖ of {stack_layer_label(name)} over training")
            self.history.set_axis_titles("training step", "time step t")

    # -- cells side by side ---------------------------------------------------------------------

    def _cell_tokens(self) -> tuple[list[int], int, int, dict]:
        """Token ids of the probe text (repeated to CELL_TOKENS), vocab size, hidden size, and the
        workspace's own trained model when it is of the family the comparison builds."""
        from explorer.analysis.probe import own_cell

        workspace = self.bus.workspace
        source, target = self.probe_text
        ids = cell_comparison_ids(workspace.tokenizer, source or target)
        config = workspace.model.config
        hidden = getattr(config, "hidden_size", CELL_HIDDEN)
        # the comparison builds models of one family: the workspace's own joins when it is one
        trained = own_cell(workspace.model)
        return ids, workspace.tokenizer.vocab_size, hidden, trained

    def compare_cells(self) -> None:
        """Build an RNN, UGRNN, GRU and LSTM of the same size in a worker and draw their curves."""
        from explorer.analysis.probe import compare_cells

        if self.bus.workspace is None:
            return
        ids, vocab, hidden, trained = self._cell_tokens()
        self.trained_cells = set(trained)
        self.cell_jobs.submit(compare_cells, ids, vocab, hidden, trained=trained)

    def show_cell_curves(self, curves: dict[str, np.ndarray]) -> None:
        self.cell_curves = curves
        registered = cells()
        for cell in curves:
            if cell not in self.cell_items:
                colour = registered[cell].colour if cell in registered else COLOURS[0]
                self.cell_items[cell] = self.cells_plot.plot(
                    [], [], pen=pg.mkPen(colour, width=2), name=cell.upper())
        for cell, item in self.cell_items.items():
            norms = curves.get(cell)
            if norms is None:
                item.setData([], [])
                continue
            item.setData(np.arange(len(norms)), np.maximum(norms, LOG_FLOOR))
            trained = cell in getattr(self, "trained_cells", ())
            name = cell.upper() + (" (trained)" if trained else "")
            self.cells_plot.legend.getLabel(item).setText(name)
        self._show_empty_states()

    # -- clipping -------------------------------------------------------------------------------

    def add_step_metrics(self, steps: list) -> None:
        rows = np.array([(m.step, m.grad_norm, m.grad_norm_clipped) for m in steps], float)
        self.norms.extend(rows)  # amortised O(1) per step however long training runs
        self._draw_norms()

    @qthrottled(timeout=SECONDARY_REDRAW_INTERVAL_MS)  # batches share a redraw (live_plots.py)
    def _draw_norms(self) -> None:
        self._update_norms()

    def _update_norms(self, force: bool = False) -> None:
        # a plot nobody sees costs the training thread the GIL for nothing: it is drawn when shown
        shown = self.isVisible() and self.in_sight() and self.pages.stack.currentWidget() is self.clip_page
        self._norms_stale = not (force or shown)
        if self._norms_stale:
            return
        data = self.norms.view()  # (N, 3)
        self.before_curve.setData(data[:, 0], np.maximum(data[:, 1], LOG_FLOOR))
        self.after_curve.setData(data[:, 0], np.maximum(data[:, 2], LOG_FLOOR))
        self.views["clipping"].set_message(self._no_norms_reason())

    def _draw_norms_if_stale(self) -> None:
        if self._norms_stale:
            self._update_norms()

    def sight_changed(self, in_sight: bool) -> None:
        super().sight_changed(in_sight)
        if in_sight:
            self._draw_norms_if_stale()

    def flush_pending_draws(self) -> None:
        super().flush_pending_draws()
        self._flush_norms()

    def _flush_norms(self) -> None:
        self._draw_norms.cancel()
        self._update_norms(force=True)

    def _on_training_state(self, state: str) -> None:
        if state != "running":  # the norms stopped growing: the last batches, no headroom
            self._flush_norms()
            self.clip_plot.getViewBox().refit()

    def _on_train_config(self, config) -> None:
        self.clip = getattr(config, "clip", None) if config is not None else None
        on = bool(self.clip)
        self.tau_line.setVisible(on)
        if on:
            self.tau_line.setValue(math.log10(self.clip))  # the y axis is logarithmic
            self.tau_line.label.setFormat(f"τ = {self.clip:g}")
        clipping = f"to τ = {self.clip:g}" if on else "off"
        self.clip_plot.setTitle(f"global gradient norm, clipping {clipping}", size="11pt")

    # -- playground -----------------------------------------------------------------------------

    def _draw_playground(self) -> None:
        a_h = self.slider.value()
        derivative = scalar_recurrence_gradient(a_h, use_tanh=self.tanh_box.isChecked())
        self.playground_derivative = derivative
        steps = np.arange(len(derivative))
        self.playground_curve.setData(steps, np.maximum(np.abs(derivative), LOG_FLOOR))
        self.playground_value.setText(f"a_h^100 = {a_h:.3g}^100 = {format_gradient(derivative[-1])}"
                                      if not self.tanh_box.isChecked()
                                      else f"∂h_100/∂h_0 = {format_gradient(derivative[-1])}")

    # -- empty states ---------------------------------------------------------------------------

    def _no_norms_reason(self) -> str | None:
        if self.norms.size:  # the steps drawn stay drawn, whatever the open model
            return None
        if self.bus.workspace is None:
            return "Open or create a model: the gradient norm of every training step is drawn here."
        return "No training step yet: Train (Ctrl+T) draws ‖g‖ before and after clipping here."

    def _empty_reasons(self) -> dict[str, str | None]:
        """View name -> why it has nothing to draw (None: it has)."""
        if self.bus.workspace is None:
            probe = "Open or create a model: the probe input's gradients are drawn here."
            return {"through_time": probe, "depth": probe, "history": probe, "params": probe,
                    "cells": "Open or create a model: Compare cells draws RNN, UGRNN, GRU and "
                             "LSTM side by side on its probe input.",
                    "clipping": self._no_norms_reason(), "playground": None}
        snapshot = self.snapshot
        probing = "Probing the model on the probe input…"
        params = snapshot is not None and snapshot.grad_params is not None and len(
            snapshot.grad_params)
        return {
            "through_time": probing if snapshot is None else None if snapshot.grad_time else
            "No gradient through time steps for this model (see the depth plot).",
            "depth": probing if snapshot is None else None if (
                snapshot.grad_depth is not None and len(snapshot.grad_depth)) else
            "No gradient by depth for this model.",
            "history": None if self.history_matrix() is not None else probing if snapshot is None
            else "No gradient history for this model's layers.",
            "params": None if params else probing if snapshot is None else
            "No parameter gradients on this probe.",
            "cells": None if self.cell_curves else "Comparing the cells (Compare cells)…",
            "clipping": self._no_norms_reason(),
            "playground": None,
        }

    def _on_probe_failed(self, message: str) -> None:
        self.status.setText(message)
        if self.snapshot is None:  # the views waiting on the probe say why it will not come
            for name in ("through_time", "depth", "history", "params"):
                self.views[name].show_message(f"The probe failed: {message}")

    def _show_empty_states(self) -> None:
        for name, reason in self._empty_reasons().items():
            self.views[name].set_message(reason)

    # -- panel contract -------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.snapshot is not None

    def plot_items(self) -> dict[str, object]:
        items = {
            "through_time": self.time_plot,
            "cells": self.cells_plot,
            "history": self.history.ci,
            "clipping": self.clip_plot,
            "playground": self.playground_plot,
            "depth": self.depth_plot,
            "params": self.param_curve.plot,
        }
        return {name: item for name, item in items.items()  # no figure of empty axes
                if not self.views[name].isHidden() and not self.views[name].empty}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        playground = (self.slider.value(), self.tanh_box.isChecked(), self.playground_derivative)
        view = GradientView(params=(self.param_curve.labels, self.param_curve.norms),
                            playground=playground, history=self.grad_history,
                            layer=self.layer_box.currentData(), cells=self.cell_curves,
                            clipping=self.norms.view(), clip=self.clip)
        return gradient_tables(self.snapshot, view)
