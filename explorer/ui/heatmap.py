"""A labelled heatmap: pyqtgraph ImageItem + token tick labels + colour bar + hover tooltip.

Follows pyqtgraph's examples/MatrixDisplayExample.py: a row-major ImageItem shifted by half a
cell so cell (r, c) is centred on (c, r), the y axis inverted so row 0 is on top, ticks at integers.
`set_matrix` updates the image in place (setImage), so a live heatmap never re-plots.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QCursor, QFont, QFontMetrics, QTransform
from PySide6.QtWidgets import QToolTip, QWidget

from explorer.ui.plot_style import TokenAxis


TITLE_SIZES = (12, 11, 10, 9, 8)  # points, tried largest first


def label_font(point_size: int = 11) -> QFont:
    font = QFont()
    font.setPointSize(point_size)
    return font


def token_axes() -> dict[str, TokenAxis]:
    return {side: TokenAxis(side) for side in ("left", "right", "top", "bottom")}


def add_heatmap_plot(
    layout: pg.GraphicsLayout,
    colormap: str = "viridis",
    row: int | None = None,
    col: int | None = None,
    **plot_kwargs,
) -> tuple[pg.PlotItem, pg.ImageItem]:
    """A PlotItem holding one row-major ImageItem, added to `layout` (grids of small heatmaps)."""
    plot = layout.addPlot(row=row, col=col, axisItems=token_axes(), **plot_kwargs)
    image = pg.ImageItem(axisOrder="row-major")
    image.setTransform(QTransform().translate(-0.5, -0.5))  # cell (r, c) centred on (c, r)
    image.setColorMap(pg.colormap.get(colormap))
    plot.addItem(image)
    plot.invertY(True)  # row 0 (the first query) on top, as in the papers' alignment figures
    plot.setDefaultPadding(0.0)
    return plot, image


class HeatmapWidget(pg.GraphicsLayoutWidget):
    """One large labelled heatmap: rows x columns with token labels, a colour bar and hover values.

    `levels=None` scales the colours to each matrix; `symmetric=True` centres them on 0 (for
    diverging colour maps such as positional encodings).
    """

    def __init__(
        self,
        colormap: str = "viridis",
        levels: tuple[float, float] | None = (0.0, 1.0),
        symmetric: bool = False,
        row_title: str = "",
        col_title: str = "",
        title: str = "",
        value_name: str = "value",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.fixed_levels = levels
        self.symmetric = symmetric
        self.value_name = value_name
        self.matrix = np.zeros((1, 1), dtype=np.float32)
        self.row_labels: list[str] = []
        self.numeric_rows = self.numeric_cols = True
        self.col_labels: list[str] = []
        self.hover_text = ""
        self.title_text = title
        self._shown_title: tuple[str, int] | None = None  # (text, point size) on screen
        self._axis_titles: tuple[str, str, str] | None = None  # (row, column, colour) on screen
        self.plot, self.image = add_heatmap_plot(self.ci, colormap)
        # keys along the top, queries down the left: read like the alignment figures in the notes;
        # the bottom repeats the ticks without text, leaving the height to the rows
        self.plot.showAxes(True, showValues=(True, True, False, False))
        self.set_axis_titles(row_title, col_title)
        initial = levels or (0.0, 1.0)
        self.colorbar = pg.ColorBarItem(
            values=initial, colorMap=pg.colormap.get(colormap), interactive=False, width=18
        )
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.colorbar.axis.setWidth(56)  # "-0.25", "1e-05": values that do not fit are not drawn
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self._fit_title()

    # -- data ----------------------------------------------------------------------------------

    def set_matrix(
        self,
        matrix: np.ndarray,
        row_labels: Sequence[str] | None = None,
        col_labels: Sequence[str] | None = None,
    ) -> None:
        """Show `matrix` (rows x cols). Labels default to indices; the image is updated in place."""
        matrix = np.asarray(matrix, dtype=np.float32)
        if matrix.ndim != 2:
            raise ValueError(f"a heatmap needs a 2-D matrix, got shape {matrix.shape}")
        # without labels the axes count rows and columns with pyqtgraph's own numeric ticks
        numeric = (row_labels is None, col_labels is None)
        relabel = numeric != (self.numeric_rows, self.numeric_cols)
        self.numeric_rows, self.numeric_cols = numeric
        rows = [str(i) for i in range(matrix.shape[0])] if row_labels is None else list(row_labels)
        cols = [str(i) for i in range(matrix.shape[1])] if col_labels is None else list(col_labels)
        if (len(rows), len(cols)) != matrix.shape:
            raise ValueError(f"labels {len(rows)} x {len(cols)} do not match matrix {matrix.shape}")
        reshaped = matrix.shape != self.matrix.shape
        self.matrix = matrix
        levels = self._levels(matrix)
        self.image.setImage(matrix, autoLevels=False, levels=levels)
        if tuple(self.colorbar.levels()) != tuple(levels):
            self.colorbar.setLevels(levels)
        if relabel or rows != self.row_labels or cols != self.col_labels:
            self.row_labels, self.col_labels = rows, cols
            self._set_ticks()
        if reshaped:
            self.plot.setRange(
                xRange=(-0.5, matrix.shape[1] - 0.5), yRange=(-0.5, matrix.shape[0] - 0.5),
                padding=0,
            )

    def _set_ticks(self) -> None:
        """Token labels on every side; each axis fits them to its length whenever it is drawn."""
        for side in ("left", "right"):  # the right axis only frames the plot: ticks, no text
            self.plot.getAxis(side).set_labels(self.row_labels, numeric=self.numeric_rows)
        for side in ("top", "bottom"):
            self.plot.getAxis(side).set_labels(self.col_labels, numeric=self.numeric_cols)
        self._fit_left_axis()

    def _levels(self, matrix: np.ndarray) -> tuple[float, float]:
        if self.fixed_levels is not None:
            return self.fixed_levels
        finite = matrix[np.isfinite(matrix)]
        if finite.size == 0:
            return (0.0, 1.0)
        low, high = float(finite.min()), float(finite.max())
        if self.symmetric:
            bound = max(abs(low), abs(high), 1e-12)
            return (-bound, bound)
        return (low, high) if high > low else (low - 0.5, high + 0.5)

    def set_title(self, text: str) -> None:
        self.title_text = text
        self._fit_title()

    def _fit_title(self) -> None:
        """The title at the largest of TITLE_SIZES that fits above the image: a title is as wide
        as its text at least, and a wider one pushed the colour bar out of the widget."""
        if not hasattr(self, "colorbar"):  # still in __init__
            return
        if not self.title_text:
            self.plot.setTitle(None)
            self._shown_title = None
            return
        # the axis's set width: its geometry follows at the next layout pass
        room = (self.width() - self.plot.getAxis("left").minimumWidth() - self.colorbar.width()
                - sum(self.ci.layout.getContentsMargins()[::2]) - 12)
        for size in TITLE_SIZES:
            # + 10: the label's HTML layout adds a few pixels to the text's own width
            if QFontMetrics(label_font(size)).horizontalAdvance(self.title_text) + 10 <= room:
                break
        if (self.title_text, size) == self._shown_title:
            return  # live updates set the same title many times a second: no relayout for those
        self._shown_title = (self.title_text, size)
        self.plot.setTitle(self.title_text, size=f"{size}pt")
        # a layout held wide by the old title: drop the cached minimum sizes and fit the view
        for layout_item in (self.plot, self.ci):
            layout_item.layout.invalidate()
            layout_item.updateGeometry()
        self.ci.setGeometry(self.range)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if getattr(self, "title_text", ""):
            self._fit_title()

    def set_axis_titles(self, row_title: str, col_title: str) -> None:
        # a style without a colour would draw the title black, invisible on a dark background
        colour = self.plot.getAxis("left").textPen().color().name()
        # live panels set the same titles at every probe: setting a label again lays out its HTML
        # and redraws the axis (and its cached pixels), so only a change is applied
        if (row_title, col_title, colour) != self._axis_titles:
            self._axis_titles = (row_title, col_title, colour)
            style = {"font-size": "11pt", "color": colour}
            self.plot.getAxis("left").setLabel(row_title or None, **style)
            self.plot.getAxis("top").setLabel(col_title or None, **style)
            # tick text plus, when titled, the title line: a label that does not fit is not drawn
            line = QFontMetrics(label_font()).height()
            self.plot.getAxis("top").setHeight(2 * line + 14 if col_title else line + 10)
            self.plot.getAxis("bottom").setHeight(8)
        self._fit_left_axis()

    def _fit_left_axis(self) -> None:
        """Wide enough for the longest row label (and the axis title), so none is dropped."""
        metrics = QFontMetrics(label_font())
        labels = [str(len(self.row_labels))] if self.numeric_rows else self.row_labels
        widest = max((metrics.horizontalAdvance(label) for label in labels[:512]), default=10)
        axis = self.plot.getAxis("left")
        width = min(widest, 220) + 16 + (metrics.height() + 6) * bool(axis.labelText)
        if width != axis.fixedWidth:  # the same width again would only re-lay out the plot
            axis.setWidth(width)
        self._fit_title()  # the title's room changed (a no-op when it did not)

    # -- hover ---------------------------------------------------------------------------------

    def cell_text(self, row: int, col: int) -> str:
        """The tooltip for one cell: the exact value and the (row, column) token pair."""
        value = float(self.matrix[row, col])
        return (
            f"{self.row_labels[row]!r} → {self.col_labels[col]!r}\n"
            f"{self.value_name} = {value:.6g}   (row {row}, column {col})"
        )

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        local = self.image.mapFromScene(scene_pos)
        row, col = math.floor(local.y()), math.floor(local.x())
        if 0 <= row < self.matrix.shape[0] and 0 <= col < self.matrix.shape[1]:
            return row, col
        return None

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = self.cell_at(scene_pos)
        self.hover_text = "" if cell is None or not self.row_labels else self.cell_text(*cell)
        self.setToolTip(self.hover_text)
        if self.hover_text and self.isVisible():
            QToolTip.showText(QCursor.pos(), self.hover_text, self)
        else:
            QToolTip.hideText()
