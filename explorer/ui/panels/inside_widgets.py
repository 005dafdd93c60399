"""Pieces of the hidden/gates and embeddings panels: background work on job runners, the units x steps
heatmap with a drag-to-select span, the traces plot and the logit-lens table."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.plot_style import TokenAxis, add_legend


class Background:
    """The panel's background work on its latest-wins job runners (explorer/ui/jobs.py), one per
    `key`, never on the GUI thread; only the newest request of each key delivers its result."""

    def __init__(self, panel, on_error) -> None:
        self.panel, self.on_error = panel, on_error
        self.runners: dict[str, object] = {}
        self.handlers: dict[str, object] = {}

    def start(self, key: str, function, on_result, *args, **kwargs) -> None:
        runner = self.runners.get(key)
        if runner is None:
            runner = self.runners[key] = self.panel.job_runner(key)
            runner.done.connect(lambda _job, result, key=key: self.handlers[key](result))
            runner.failed.connect(lambda _job, message: self.on_error(message))
        self.handlers[key] = on_result
        runner.submit(function, *args, **kwargs)


class UnitHeatmap(HeatmapWidget):
    """Units down, time steps (tokens) across. Hover names the unit, the token and the value; a
    left-button drag across the steps selects a span (LSTMVis), shown as a region snapped to tokens."""

    def __init__(self, on_span, **kwargs) -> None:
        super().__init__("viridis", levels=None, row_title="unit", col_title="token", **kwargs)
        self.on_span = on_span
        self.region = pg.LinearRegionItem(orientation="vertical", brush=(255, 255, 255, 40),
                                          pen=pg.mkPen("w", width=2))
        self.region.setZValue(10)
        self.region.hide()
        self.plot.addItem(self.region, ignoreBounds=True)
        self.region.sigRegionChangeFinished.connect(self._region_moved)
        self.plot.getViewBox().mouseDragEvent = self._drag  # a drag selects instead of panning
        self._drag_start: float | None = None

    rows_are = "units"  # "units" (an RNN layer), "layers" (a residual stream) or "dimensions"
    block = ""  # the block whose output's dimensions the rows are ("layer 2 output")

    def cell_text(self, row: int, col: int) -> str:
        value = f"{self.value_name} = {float(self.matrix[row, col]):.6g}"
        token = f"token {self.col_labels[col]!r}"
        if self.rows_are == "layers":  # a Transformer's residual stream, read after each layer
            where = "embedding" if self.row_labels[row] == "embed" else self.row_labels[row]
            return f"{where}, position {col}, {token}\n{value}"
        if self.rows_are == "dimensions":
            return f"{self.block}, dimension {row}, position {col}, {token}\n{value}"
        return f"unit {self.row_labels[row]}, {token} (step {col})\n{value}"

    def span(self) -> tuple[int, int] | None:
        if not self.region.isVisible():
            return None
        low, high = self.region.getRegion()
        # token i spans [i - 0.5, i + 0.5]: snap each edge to the nearest token boundary
        start, end = max(0, math.floor(low + 1.0)), min(self.matrix.shape[1], math.floor(high + 1.0))
        return (start, end) if end > start else None

    def show_span(self, start: int, end: int) -> None:
        self.region.blockSignals(True)
        self.region.setRegion((start - 0.5, end - 0.5))
        self.region.blockSignals(False)
        self.region.show()

    def _drag(self, event, axis=None) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            pg.ViewBox.mouseDragEvent(self.plot.getViewBox(), event, axis)
            return
        event.accept()
        x = self.plot.getViewBox().mapSceneToView(event.scenePos()).x()
        if event.isStart():
            self._drag_start = x
        if self._drag_start is None:
            return
        low, high = sorted((self._drag_start, x))
        self.show_span(math.floor(low + 0.5), math.floor(high + 0.5) + 1)
        if event.isFinish():
            self._drag_start = None
            self._region_moved()

    def _region_moved(self) -> None:
        span = self.span()
        if span is not None:
            self.show_span(*span)  # snapped to whole tokens
            self.on_span(*span)


class TracesPlot(pg.PlotWidget):
    """The selected units' values as lines over the text (LSTMVis's pattern plot), with the
    threshold as a dashed line and, optionally, a reference curve (nesting depth)."""

    COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
    MAX_CURVES = 8

    def __init__(self) -> None:
        super().__init__(axisItems={"bottom": TokenAxis("bottom")})
        self.plot = self.getPlotItem()
        self.plot.setLabel("left", "value")
        self.plot.showGrid(x=False, y=True, alpha=0.3)
        self.legend = add_legend(self.plot)
        self.plot.getAxis("left").enableAutoSIPrefix(False)  # h_t in [-1, 1] reads as itself
        self.curves = [self.plot.plot(pen=pg.mkPen(c, width=2)) for c in self.COLOURS]  # named when shown
        self.threshold_line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#888", style=Qt.PenStyle.DashLine))
        self.plot.addItem(self.threshold_line)
        self.names: list[str] = []
        self.values: np.ndarray = np.zeros((0, 0))
        self.tokens: list[str] = []
        self.legend.hide()

    def show_units(self, values: np.ndarray, names: list[str], tokens: list[str], threshold: float) -> None:
        """values (k, T): one line per unit (the first MAX_CURVES)."""
        self.values, self.names, self.tokens = values[: self.MAX_CURVES], names[: self.MAX_CURVES], tokens
        self.plot.getAxis("bottom").set_labels(tokens)
        self.legend.clear()
        x = np.arange(len(tokens))
        for i, curve in enumerate(self.curves):
            if i < len(self.names):
                curve.setData(x, self.values[i])
                self.legend.addItem(curve, self.names[i])
            else:
                curve.setData([], [])
        self.threshold_line.setValue(threshold)
        self.legend.setVisible(bool(self.names))
        self.plot.enableAutoRange()

    def table(self) -> tuple[list[str], list[list]]:
        return ["unit", *self.tokens], [[n, *row.tolist()] for n, row in zip(self.names, self.values)]


class LensTable(QTableWidget):
    """The logit lens: layers down (top layer first, as it reads bottom-up), positions across; each
    cell the top next token and its probability, shaded by the probability."""

    def show_lens(self, lens) -> None:
        layers = len(lens.layer_labels)
        self.setRowCount(layers)
        self.setColumnCount(len(lens.tokens))
        self.setHorizontalHeaderLabels([f"{t}\n→ {n}" for t, n in zip(lens.tokens, lens.targets or lens.tokens)])
        self.setVerticalHeaderLabels(lens.layer_labels[::-1])
        for r in range(layers):
            layer = layers - 1 - r
            for c in range(len(lens.tokens)):
                p = float(lens.top_probs[layer, c])
                item = QTableWidgetItem(f"{lens.top_tokens[layer][c]}\n{p:.2f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setBackground(QColor.fromHsvF(0.6, min(1.0, p), 0.95))
                item.setForeground(QColor("white" if p > 0.55 else "black"))
                tip = f"{lens.layer_labels[layer]}, position {c} ({lens.tokens[c]!r}): top {lens.top_tokens[layer][c]!r} p={p:.4f}"
                if lens.target_probs is not None and lens.targets[c]:  # the last token has none
                    tip += f"\np(true next {lens.targets[c]!r}) = {float(lens.target_probs[layer, c]):.4f}"
                item.setToolTip(tip)
                self.setItem(r, c, item)
        self.resizeColumnsToContents()
        self.resizeRowsToContents()
