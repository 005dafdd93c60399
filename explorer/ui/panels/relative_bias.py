"""T5's relative-position bias, one head at a time: the heatmap b[h, q, k] (query position down,
key position across) that the model adds to every attention score, and every head's bias against
the distance k − q. A page of the positional panel; models without such a bias get one line why.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from explorer.export.positional import DEFAULT_BIAS_LENGTH, relative_bias_tables, relative_biases
from explorer.ui.heatmap import HeatmapWidget, label_font
from explorer.ui.plot_style import add_legend, readable_axes

HEAD_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#843c39")
NO_BIAS = "The loaded model learns no relative-position bias (only T5-style models do)."


class RelativeBiasView(QWidget):
    """Controls, the per-head heatmap and the bias-against-distance curves of one model."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = None
        self.biases = []  # the family's RelativeBias (explorer.hf.positions), one per stack
        self.stack_box = QComboBox()
        self.stack_box.setToolTip("encoder: buckets for both directions; decoder: causal buckets")
        self.head_box = QComboBox()
        self.head_box.setToolTip("the attention head whose bias the heatmap shows")
        self.length_box = QSpinBox()
        self.length_box.setRange(2, 512)
        self.length_box.setValue(DEFAULT_BIAS_LENGTH)
        self.length_box.setToolTip("query and key positions drawn")
        self.status = QLabel(NO_BIAS)
        self.status.setWordWrap(True)
        controls = QHBoxLayout()
        for text, widget in (("stack", self.stack_box), ("head", self.head_box),
                             ("positions", self.length_box)):
            controls.addWidget(QLabel(text))
            controls.addWidget(widget)
        controls.addStretch(1)

        self.heatmap = HeatmapWidget(
            "CET-D1", levels=None, symmetric=True, row_title="query position q",
            col_title="key position k", title="relative-position bias", value_name="bias")
        self.curves = pg.PlotWidget(title="bias against distance k − q, every head",
                                    axisItems=readable_axes("left", "bottom"))
        plot = self.curves.getPlotItem()
        plot.setLabel("bottom", "distance k − q")
        plot.setLabel("left", "bias added to the score")
        plot.showGrid(x=True, y=True, alpha=0.25)
        for side in ("left", "bottom"):
            plot.getAxis(side).setTickFont(label_font())
        add_legend(plot, below=True)
        self.curve_items: list[pg.PlotDataItem] = []
        views = QHBoxLayout()
        views.addWidget(self.heatmap, stretch=1)
        views.addWidget(self.curves, stretch=1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addLayout(views, stretch=1)

        self.stack_box.currentIndexChanged.connect(self.draw)
        self.head_box.currentIndexChanged.connect(self.draw)
        self.length_box.valueChanged.connect(self.recompute)
        self._show_controls(False)

    def set_model(self, model) -> None:
        """Any model: its family's relative-position bias (T5), or none (one line why)."""
        self.model = model
        self.recompute()

    def recompute(self) -> None:
        self.biases = relative_biases(self.model, self.length_box.value()) if self.model else []
        self._show_controls(bool(self.biases))
        keep_stack, keep_head = self.stack_box.currentData(), self.head_box.currentData()
        for box, items in ((self.stack_box, [(b.stack, b.stack) for b in self.biases]),
                           (self.head_box, [(f"head {h + 1}", h) for h in range(self._heads())])):
            box.blockSignals(True)
            box.clear()
            for text, data in items:
                box.addItem(text, data)
            box.blockSignals(False)
        self.stack_box.setCurrentIndex(max(0, self.stack_box.findData(keep_stack)))
        self.head_box.setCurrentIndex(max(0, self.head_box.findData(keep_head)))
        self.draw()

    def _heads(self) -> int:
        return self.biases[0].bias.shape[0] if self.biases else 0

    def _show_controls(self, shown: bool) -> None:
        for widget in (self.stack_box, self.head_box, self.length_box, self.heatmap, self.curves):
            widget.setVisible(shown)

    def chosen(self):
        return next((b for b in self.biases if b.stack == self.stack_box.currentData()), None)

    def draw(self) -> None:
        bias = self.chosen()
        if bias is None:
            self.status.setText(NO_BIAS)
            self.heatmap.set_matrix(np.zeros((1, 1)))
            for item in self.curve_items:
                item.setData([0.0], [], stepMode="center")
            return
        head = self.head_box.currentData() or 0
        self.heatmap.set_matrix(bias.bias[head])
        self.heatmap.set_title(f"{bias.stack}, head {head + 1}: bias b[q, k]")
        legend = self.curves.getPlotItem().legend
        legend.clear()
        while len(self.curve_items) < len(bias.by_distance):
            colour = HEAD_COLOURS[len(self.curve_items) % len(HEAD_COLOURS)]
            self.curve_items.append(self.curves.plot([], [], pen=pg.mkPen(colour, width=2)))
        for index, item in enumerate(self.curve_items):
            if index < len(bias.by_distance):
                edges = np.append(bias.distances - 0.5, bias.distances[-1] + 0.5)  # one step a distance
                item.setData(edges, bias.by_distance[index], stepMode="center")
                item.setPen(pg.mkPen(HEAD_COLOURS[index % len(HEAD_COLOURS)],
                                     width=3 if index == head else 1.5))
                legend.addItem(item, f"head {index + 1}")
            else:
                item.setData([0.0], [], stepMode="center")
        direction = "both directions" if bias.bidirectional else "earlier keys only (causal)"
        self.status.setText(
            f"{bias.stack}: {bias.num_buckets} buckets of k − q, {direction}, exact up to "
            f"{bias.num_buckets // (2 if bias.bidirectional else 1) // 2}, logarithmic up to "
            f"{bias.max_distance}; one learned scalar per bucket and head, added to every score.")

    def has_content(self) -> bool:
        return self.chosen() is not None

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return relative_bias_tables(self.chosen(), self.head_box.currentData() or 0)
