"""Small widgets the decoding panels share: bar charts updated in place, a layer/head picker for
attention, spin boxes, and the beam tree's node detail (attention row and sibling candidates)."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from explorer.analysis.labels import head_label, layer_label
from explorer.ui.plot_style import theme_backdrop, theme_text

BAR_COLOR = "#1f77b4"
HIGHLIGHT_COLOR = "#ff7f0e"


def dark_on_white(plot: pg.PlotItem) -> None:
    """Axes and title in the theme's text colour (black on the light theme's white: print-ready
    exports), the title included: pyqtgraph draws a title without a colour in grey."""
    text = theme_text()
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        axis.setPen(text)
        axis.setTextPen(text)
    plot.titleLabel.setAttr("color", text)


class BarChart:
    """Horizontal bars on a PlotItem, updated in place: one row per token, the token on the left
    axis and its value printed at the end of its bar, so every token reads in full however long it
    is or however many there are (rows that do not fit are a wheel-scroll away)."""

    ROW_PX = 16  # pixels one row needs for its 8 pt label
    MAX_LABEL_CHARS = 16

    def __init__(self, plot: pg.PlotItem, value_label: str, color: str = BAR_COLOR,
                 value_format: str = "{:.3f}") -> None:
        self.plot = plot
        self.value_format = value_format
        dark_on_white(plot)
        self.brush = pg.mkBrush(color)
        self.highlight_brush = pg.mkBrush(HIGHLIGHT_COLOR)
        self.bars = pg.BarGraphItem(x0=[], y=[], width=[], height=0.75, brush=self.brush)
        plot.addItem(self.bars)
        plot.invertY(True)  # the first (most probable) row on top
        if value_label:
            plot.setLabel("bottom", value_label)
        else:  # the title names the values and every bar prints its own: the room goes to rows
            plot.hideAxis("bottom")
        self.small_font = QFont()
        self.small_font.setPointSize(8)
        for name in ("left", "bottom"):
            plot.getAxis(name).setStyle(tickFont=self.small_font)
        plot.getAxis("bottom").enableAutoSIPrefix(False)
        plot.setMouseEnabled(x=False, y=True)
        plot.showGrid(x=True, alpha=0.3)
        self.value_texts: list[pg.TextItem] = []  # a reused pool, one per row
        self.labels: list[str] = []
        self.values = np.zeros(0)
        self.value_max = 1.0
        plot.getViewBox().sigResized.connect(self._show_rows_that_fit)

    def set_title(self, text: str) -> None:
        self.plot.setTitle(text, size="9pt")

    def set_data(self, labels: list[str], values: np.ndarray, highlight: int | None = None,
                 value_max: float | None = None) -> None:
        self.labels = list(labels)
        self.values = np.asarray(values, dtype=float)
        rows = np.arange(len(self.values))
        brushes = [self.highlight_brush if i == highlight else self.brush for i in rows]
        self.bars.setOpts(x0=np.zeros(len(rows)), y=rows, width=self.values, height=0.75,
                          brushes=brushes)
        shown = [shorten(str(t), self.MAX_LABEL_CHARS) for t in self.labels]
        left = self.plot.getAxis("left")
        left.setTicks([list(enumerate(shown))])
        # as wide as the longest label: the axis's own widening came a paint too late and
        # dropped every label longer than the ones drawn before ("forest-SG" next to "the")
        widest = max((QFontMetrics(self.small_font).horizontalAdvance(t) for t in shown), default=0)
        left.setWidth(widest + 12)
        while len(self.value_texts) < len(rows):
            text = pg.TextItem(color=theme_text(), anchor=(0, 0.5))
            text.setFont(self.small_font)
            self.plot.addItem(text, ignoreBounds=True)
            self.value_texts.append(text)
        for text, row, value in zip(self.value_texts, rows, self.values):
            text.setText(" " + self.value_format.format(value))  # clear of the bar's end
            text.setPos(max(float(value), 0.0), float(row))
            text.setVisible(True)
        for text in self.value_texts[len(rows):]:
            text.setVisible(False)
        self.value_max = value_max if value_max is not None else max(
            float(self.values.max(initial=0.0)), 1e-6)
        # Room right of the longest bar for its printed value.
        self.plot.setXRange(0, self.value_max * 1.22, padding=0)
        self._show_rows_that_fit()

    def rows_that_fit(self) -> int:
        height = self.plot.getViewBox().height()
        return max(int(height // self.ROW_PX), 1) if height > 0 else len(self.values)

    def _show_rows_that_fit(self) -> None:
        shown = min(max(len(self.values), 1), self.rows_that_fit())
        self.plot.setYRange(-0.5, shown - 0.5, padding=0)

    def clear(self) -> None:
        self.set_data([], np.zeros(0), value_max=1.0)


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class AttentionPicker(QWidget):
    """Layer and head selectors for one (L, H, Tk) attention array: a head, or the heads' mean."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.layer_box = QComboBox()
        self.head_box = QComboBox()
        for box in (self.layer_box, self.head_box):  # "mean of heads" in full
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.layer_box.setToolTip("Decoder layer whose cross-attention is shown")
        self.head_box.setToolTip("Attention head, or the mean over heads")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.layer_box)  # the items say "layer 1", "head 1": no labels needed
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
            (self.layer_box, [layer_label(i) for i in range(layers)], max(layers - 1, 0)),
            (self.head_box, ["mean of heads"] + [head_label(i) for i in range(heads)], 0),
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


def show_text(box: QLineEdit, text: str) -> None:
    """Set a line edit's text showing its beginning (setText leaves the view on the end of a long
    text), with the whole text as its tooltip."""
    box.setText(text)
    box.setCursorPosition(0)
    box.setToolTip(text)


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

    MAX_CANDIDATES = 8  # the node's siblings shown, best first (the node itself always)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.info = QLabel()
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.RichText)
        self.info.setStyleSheet("QLabel { font-size: 8pt; }")
        self.picker = AttentionPicker()
        self.charts = pg.GraphicsLayoutWidget()
        # Side by side, each the pane's full height: a source sentence's tokens all fit.
        self.attention_chart = BarChart(self.charts.addPlot(row=0, col=0), "")
        self.attention_chart.set_title("attention over source")
        self.candidate_chart = BarChart(self.charts.addPlot(row=0, col=1), "")
        self.candidate_chart.set_title("p(candidate | prefix)")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.info)
        layout.addWidget(self.picker)
        layout.addWidget(self.charts, 1)
        self.setMinimumWidth(340)  # both chart titles and their token columns fit in full
        self.clear()

    def clear(self) -> None:
        self.attention_chart.clear()
        self.candidate_chart.clear()
        self.info.setText("Click a node to see where it came from.")

    def show_node(self, description: str, attention, source_tokens, siblings, node_id) -> None:
        """`attention` (L, H, Tk) or None; `siblings`: BeamNodes sharing the node's parent."""
        self.info.setText("<br>".join(html.escape(line) for line in description.splitlines()))
        if attention is None:
            self.attention_chart.clear()
        else:
            self.picker.set_shape(*attention.shape[:2])
            row = self.picker.row(attention)
            self.attention_chart.set_data(source_tokens[: len(row)], row, value_max=1.0)
        ranked = sorted(siblings, key=lambda n: -n.logprob)
        shown = ranked[: self.MAX_CANDIDATES]
        if node_id not in [s.id for s in shown]:
            shown[-1:] = [next(s for s in ranked if s.id == node_id)]
        ids = [s.id for s in shown]
        self.candidate_chart.set_data([s.token for s in shown], np.exp([s.logprob for s in shown]),
                                      highlight=ids.index(node_id), value_max=1.0)


class TextPool:
    """Text items on a plot, made as needed and reused: `show(entries)` sets the first
    len(entries) of them and hides the rest, so relabelling a zoomed view allocates nothing."""

    def __init__(self, plot: pg.PlotItem, font: QFont) -> None:
        self.plot, self.font = plot, font
        self.items: list[pg.TextItem] = []

    def show(self, entries) -> None:
        """`entries`: (text, x, y, colour, anchor) each."""
        while len(self.items) < len(entries):
            item = pg.TextItem(fill=pg.mkBrush(theme_backdrop()))  # readable over edges
            item.setFont(self.font)
            item.textItem.document().setDocumentMargin(1)  # the box is the text's own height
            self.plot.addItem(item, ignoreBounds=True)
            self.items.append(item)
        for item, (text, x, y, colour, anchor) in zip(self.items, entries):
            item.setText(text)
            item.setColor(colour)
            item.setAnchor(anchor)
            item.setPos(x, y)
            item.setVisible(True)
        for item in self.items[len(entries):]:
            item.setVisible(False)
