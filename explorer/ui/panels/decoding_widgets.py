"""Small widgets the decoding panels share: bar charts updated in place, a layer/head picker for
attention, spin boxes, and the beam tree's node detail (attention row and sibling candidates)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from explorer.ui.heatmap import tick_levels

BAR_COLOR = "#1f77b4"
HIGHLIGHT_COLOR = "#ff7f0e"


def dark_on_white(plot: pg.PlotItem) -> None:
    """Black axes and text, for a plot on a white background (print-ready exports)."""
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen("k")
        axis.setTextPen("k")
    plot.titleLabel.setAttr("color", "k")


class BarChart:
    """One BarGraphItem on a PlotItem, updated in place, with token labels on the x axis."""

    def __init__(self, plot: pg.PlotItem, y_label: str, color: str = BAR_COLOR) -> None:
        self.plot = plot
        dark_on_white(plot)
        self.brush = pg.mkBrush(color)
        self.highlight_brush = pg.mkBrush(HIGHLIGHT_COLOR)
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8, brush=self.brush)
        plot.addItem(self.bars)
        plot.setLabel("left", y_label)
        plot.getAxis("left").enableAutoSIPrefix(False)
        small = QFont()
        small.setPointSize(8)
        plot.getAxis("bottom").setStyle(tickFont=small)
        plot.setMouseEnabled(x=True, y=False)
        plot.showGrid(y=True, alpha=0.3)
        self.labels: list[str] = []
        self.values = np.zeros(0)

    def set_data(self, labels: list[str], values: np.ndarray, highlight: int | None = None,
                 y_max: float | None = None) -> None:
        self.labels = list(labels)
        self.values = np.asarray(values, dtype=float)
        x = np.arange(len(self.values))
        brushes = [self.highlight_brush if i == highlight else self.brush for i in x]
        self.bars.setOpts(x=x, height=self.values, width=0.8, brushes=brushes)
        self.plot.getAxis("bottom").setTicks(tick_levels(self.labels))
        self.plot.setXRange(-0.6, max(len(self.values), 1) - 0.4, padding=0)
        top = y_max if y_max is not None else max(float(self.values.max(initial=0.0)), 1e-6)
        self.plot.setYRange(0, top, padding=0.05)

    def clear(self) -> None:
        self.set_data([], np.zeros(0), y_max=1.0)


class AttentionPicker(QWidget):
    """Layer and head selectors for one (L, H, Tk) attention array: a head, or the heads' mean."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layer_box = QComboBox()
        self.head_box = QComboBox()
        self.layer_box.setToolTip("Decoder layer whose cross-attention is shown")
        self.head_box.setToolTip("Attention head, or the mean over heads")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Layer"))
        row.addWidget(self.layer_box)
        row.addWidget(QLabel("Head"))
        row.addWidget(self.head_box)
        row.addStretch(1)
        self._shape = (0, 0)
        self.layer_box.currentIndexChanged.connect(lambda _: self.changed.emit())
        self.head_box.currentIndexChanged.connect(lambda _: self.changed.emit())

    def set_shape(self, layers: int, heads: int) -> None:
        if (layers, heads) == self._shape:
            return
        self._shape = (layers, heads)
        for box, items, last in (
            (self.layer_box, [f"{i + 1}" for i in range(layers)], max(layers - 1, 0)),
            (self.head_box, ["mean"] + [f"{i + 1}" for i in range(heads)], 0),
        ):
            box.blockSignals(True)
            box.clear()
            box.addItems(items)
            box.setCurrentIndex(last)  # the top layer: the one closest to the output
            box.blockSignals(False)
        self.setEnabled(layers > 0)

    def select(self, layer: int, head: int | None) -> None:
        """Layer index, and head index or None for the mean of heads."""
        self.layer_box.setCurrentIndex(layer)
        self.head_box.setCurrentIndex(0 if head is None else head + 1)

    def row(self, attention: np.ndarray) -> np.ndarray:
        """(L, H, Tk) -> (Tk,): the chosen layer's chosen head, or its heads' mean."""
        layer = max(self.layer_box.currentIndex(), 0)
        head = self.head_box.currentIndex() - 1
        weights = attention[min(layer, attention.shape[0] - 1)]  # (H, Tk)
        return weights.mean(axis=0) if head < 0 else weights[min(head, weights.shape[0] - 1)]


def spin_box(cls, bounds, value, tip: str, step: float | None = None):
    """A QSpinBox / QDoubleSpinBox that reports a value only once typing is finished."""
    box = cls()
    box.setRange(*bounds)
    if step is not None or isinstance(box, QDoubleSpinBox):
        box.setSingleStep(step or 0.1)
    box.setValue(value)
    box.setToolTip(tip)
    box.setKeyboardTracking(False)
    return box


class NodeDetail(QWidget):
    """What produced one beam-tree node: its scores, the attention row over the source, and the
    candidates ranked after the same prefix (the node highlighted among its siblings)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.RichText)
        self.picker = AttentionPicker()
        self.charts = pg.GraphicsLayoutWidget()
        self.charts.setBackground("w")
        self.attention_chart = BarChart(self.charts.addPlot(row=0, col=0), "attention weight")
        self.attention_chart.plot.setTitle("attention over the source")
        self.candidate_chart = BarChart(self.charts.addPlot(row=1, col=0), "p(token | prefix)")
        self.candidate_chart.plot.setTitle("candidates after the same prefix")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.info)
        layout.addWidget(self.picker)
        layout.addWidget(self.charts, 1)
        self.clear()

    def clear(self) -> None:
        self.attention_chart.clear()
        self.candidate_chart.clear()
        self.info.setText("Click a node to see where it came from.")

    def show_node(self, description: str, attention, source_tokens, siblings, node_id) -> None:
        """`attention` (L, H, Tk) or None; `siblings`: BeamNodes sharing the node's parent."""
        self.info.setText("<br>".join(description.replace("<", "&lt;").splitlines()))
        if attention is None:
            self.attention_chart.clear()
        else:
            self.picker.set_shape(*attention.shape[:2])
            row = self.picker.row(attention)
            self.attention_chart.set_data(source_tokens[: len(row)], row, y_max=1.0)
        siblings = sorted(siblings, key=lambda n: -n.logprob)
        ids = [s.id for s in siblings]
        self.candidate_chart.set_data([s.token for s in siblings],
                                      np.exp([s.logprob for s in siblings]),
                                      highlight=ids.index(node_id) if node_id in ids else None)
