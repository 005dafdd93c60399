"""A compact beam search tree for the Compare runs panel's side-by-side page: one run's beam
search on the compared source, drawn as the Beam search tree panel lays it out
(explorer.analysis.beam_layout: x = decoding step, y = leaf order, the best branch on top), with
kept, pruned and finished candidates, the best hypothesis' path and the kept tokens' labels.
Selecting nodes, the node detail and the greedy path stay in the Beam search tree panel.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from explorer.analysis.beam_layout import edge_segments, layout_tree
from explorer.analysis.beam_tree import BeamTreeIndex, beam_tables
from explorer.decoding.types import BeamResult
from explorer.ui.plot_style import StepAxis, theme_backdrop, theme_text

STATUS_STYLE = {  # status -> (colour, symbol, size); the beam tree panel's colours
    "pruned": ("#b8b8b8", "o", 6),
    "kept": ("#1f77b4", "o", 9),
    "finished": ("#2ca02c", "s", 11),
    "root": (None, "o", 10),  # the theme's text colour
}
BEST_COLOUR = "#9467bd"
PRUNED_ROW = 0.4  # rows a pruned leaf takes, as in the beam tree panel
MAX_LABELS = 200  # token labels drawn; a longer search shows the first ones
LABEL_ROW_PX = 18  # rows closer than this on screen: only the best hypothesis is labelled


class BeamTreeView(pg.GraphicsLayoutWidget):
    """One BeamResult: nodes by status, edges, the best hypothesis' path, token labels."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.result: BeamResult | None = None
        self.tree: BeamTreeIndex | None = None
        self.positions: tuple[dict[int, float], dict[int, float]] = ({}, {})
        self.plot = self.addPlot(axisItems={"bottom": StepAxis("bottom")})
        self.plot.invertY(True)  # the best branch on top
        self.plot.setLabel("bottom", "decoding step")
        self.plot.getAxis("left").setTicks([[]])  # rows are an order, not a quantity
        self.plot.hideButtons()
        self.edges = {status: self.plot.plot([], [], connect="pairs",
                                             pen=pg.mkPen(STATUS_STYLE[status][0], width=1.5))
                      for status in ("pruned", "kept", "finished")}
        self.best_line = self.plot.plot([], [], pen=pg.mkPen(BEST_COLOUR, width=4))
        self.best_line.setZValue(-1)
        self.nodes = {}
        for status, (colour, symbol, size) in STATUS_STYLE.items():
            scatter = pg.ScatterPlotItem(symbol=symbol, size=size,
                                         pen=pg.mkPen(theme_backdrop(255), width=0.5),
                                         brush=pg.mkBrush(colour or theme_text()))
            self.plot.addItem(scatter)
            self.nodes[status] = scatter
        self.labels: list[pg.TextItem] = []
        self.layout_ = None
        self._labelled_all: bool | None = None

    def set_result(self, result: BeamResult, title: str) -> None:
        self.result, self.tree = result, BeamTreeIndex(result)
        tree = self.tree
        layout = layout_tree(tree.ids, tree.parents, tree.steps, tree.scores,
                             leaf_height=np.where(tree.status == "pruned", PRUNED_ROW, 1.0))
        for status, scatter in self.nodes.items():
            chosen = tree.status == status
            scatter.setData(x=layout.x[chosen], y=layout.y[chosen])
        for status, line in self.edges.items():
            x, y = edge_segments(layout, tree.status == status)
            line.setData(x, y, connect="pairs")
        best = [0, *tree.nbest_nodes[0]] if tree.nbest_nodes else [0]
        self.best_line.setData(layout.x[best], layout.y[best])
        self.positions = (dict(zip(tree.ids.tolist(), layout.x.tolist())),
                          dict(zip(tree.ids.tolist(), layout.y.tolist())))
        self.layout_ = layout
        self.plot.setTitle(title, size="10pt")
        self._labelled_all = None
        self._fit()

    def _fit(self) -> None:
        """The whole tree, with LABEL_ROW_PX above the top row for its labels."""
        if getattr(self, "layout_", None) is None:  # also resizeEvent during __init__
            return
        rows, height = self.layout_.rows, max(self.plot.vb.height(), 2.0 * LABEL_ROW_PX)
        margin = LABEL_ROW_PX * rows / (height - LABEL_ROW_PX)  # rows that make LABEL_ROW_PX
        self.plot.setRange(xRange=(-1.4, float(self.layout_.x.max()) + 0.8),
                           yRange=(-margin, rows), padding=0)
        self._label()

    def _row_px(self) -> float:
        return self.plot.vb.height() / max(self.layout_.rows, 1.0)

    def _label(self) -> None:
        """Tokens of the best hypothesis always; of every kept and finished candidate when rows
        are far enough apart on screen for them not to overlap."""
        every = self._row_px() >= LABEL_ROW_PX
        if every == self._labelled_all:
            return
        self._labelled_all = every
        for item in self.labels:
            self.plot.removeItem(item)
        self.labels = []
        layout = self.layout_
        if every:
            shown = np.flatnonzero(np.isin(self.tree.status, ("kept", "finished")))[:MAX_LABELS]
        else:
            shown = np.array(self.tree.nbest_nodes[0] if self.tree.nbest_nodes else [], int)
        for index in shown:
            item = pg.TextItem(self.result.nodes[index].token, color=theme_text(),
                               anchor=(0.5, 1.1))
            item.setPos(float(layout.x[index]), float(layout.y[index]))
            self.plot.addItem(item)
            self.labels.append(item)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        """The beam tree panel's "nodes" and "hypotheses" tables of this search."""
        if self.result is None:
            return {}
        x, y = self.positions
        return beam_tables(self.result, self.tree, x, y)
