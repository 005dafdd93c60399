"""The attention model view: every layer x head of one kind as ONE ImageItem mosaic in one plot.

144 heads at a few hundred tokens were 144 PlotItems (each with four axes, a ViewBox and a menu):
seconds to build on the GUI thread. One image (explorer/analysis/mosaic.py: tiles with 1-pixel
gaps, block-averaged to at most 64 x 64 per tile) colours and paints in milliseconds. Layers are
labelled down the left, heads along the top; hover names the layer, head, query, key and weight;
a left click on a tile emits `tile_clicked(layer, head)`.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QToolTip

from explorer.analysis.labels import head_label, layer_head_label, layer_label
from explorer.analysis.mosaic import AttentionMosaic, attention_mosaic
from explorer.events import AttentionSnapshot


class ModelViewWidget(pg.GraphicsLayoutWidget):
    tile_clicked = Signal(int, int)  # (layer, head)

    def __init__(self, colormap: str = "viridis", parent=None) -> None:
        super().__init__(parent)
        self.mosaic: AttentionMosaic | None = None
        self.maps: list[AttentionSnapshot] = []
        self.hover_text = ""
        axes = {side: pg.AxisItem(side) for side in ("left", "top", "right", "bottom")}
        self.plot = self.ci.addPlot(row=0, col=0, axisItems=axes)
        self.plot.showAxes(True, showValues=(True, True, False, False))
        self.plot.invertY(True)  # layer 1 on top; in each tile the first query on top
        self.plot.setAspectLocked(True)
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.plot.setDefaultPadding(0.0)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get(colormap))
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=pg.colormap.get(colormap),
                                        interactive=False, width=18)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.scene().sigMouseClicked.connect(self._on_mouse_clicked)

    def set_maps(self, maps: list[AttentionSnapshot], title: str = "") -> None:
        """Show every head of `maps` (one kind, layers in order, all of one shape), in place."""
        reshaped = self.mosaic is None or [m.layer for m in maps] != self.mosaic.layers or (
            maps[0].weights.shape != self.maps[0].weights.shape)
        self.maps = maps
        self.mosaic = attention_mosaic([m.weights for m in maps], [m.layer for m in maps])
        self.image.setImage(self.mosaic.image, autoLevels=False, levels=(0.0, 1.0))
        if reshaped:
            self._set_ticks()
            height, width = self.mosaic.image.shape
            self.plot.setRange(xRange=(0, width), yRange=(0, height), padding=0)
        tq, tk = self.mosaic.tile_shape
        if self.mosaic.downsampled():
            title += (f" · each tile {self.mosaic.queries} × {self.mosaic.keys} tokens averaged to "
                      f"{tq} × {tk} blocks")
        self.plot.setTitle(title + " · click a tile to open it", size="9pt")

    def _set_ticks(self) -> None:
        tq, tk = self.mosaic.tile_shape
        rows = [((i * (tq + 1) + tq / 2), layer_label(layer)) for i, layer in enumerate(self.mosaic.layers)]
        cols = [((h * (tk + 1) + tk / 2), head_label(h)) for h in range(self.mosaic.heads)]
        for side, ticks in (("left", rows), ("right", rows), ("top", cols), ("bottom", cols)):
            self.plot.getAxis(side).setTicks([ticks, []])  # bottom and right: marks, no text

    def tiles(self) -> dict[tuple[int, int], np.ndarray]:
        """(layer, head) -> its tile of the mosaic, as drawn."""
        if self.mosaic is None:
            return {}
        return {(layer, head): self.mosaic.tile(layer, head)
                for layer in self.mosaic.layers for head in range(self.mosaic.heads)}

    def tile_rect(self, layer: int, head: int) -> tuple[float, float, float, float]:
        """(x, y, width, height) of a tile in the image's (and plot's) coordinates."""
        row, col = self.mosaic.tile_origin(self.mosaic.layers.index(layer), head)
        tq, tk = self.mosaic.tile_shape
        return col, row, tk, tq

    # -- hover and click -----------------------------------------------------------------------

    def cell_at(self, scene_pos: QPointF):
        """(layer, head, queries, keys) under a scene point, or None."""
        if self.mosaic is None:
            return None
        local = self.image.mapFromScene(scene_pos)
        return self.mosaic.cell_at(math.floor(local.y()), math.floor(local.x()))

    def cell_text(self, layer: int, head: int, queries: range, keys: range) -> str:
        snapshot = self.maps[self.mosaic.layers.index(layer)]
        if len(queries) == 1 and len(keys) == 1:
            q, k = queries[0], keys[0]
            return (f"{layer_head_label(layer, head)}\n{snapshot.rows[q]!r} → {snapshot.cols[k]!r}\n"
                    f"weight = {float(snapshot.weights[head, q, k]):.6g}   (query {q}, key {k})")
        mean = float(snapshot.weights[head, queries.start:queries.stop, keys.start:keys.stop].mean())
        return (f"{layer_head_label(layer, head)}\n"
                f"queries {queries.start}–{queries.stop - 1} ({snapshot.rows[queries.start]!r}…) → "
                f"keys {keys.start}–{keys.stop - 1} ({snapshot.cols[keys.start]!r}…)\n"
                f"mean weight = {mean:.6g}   (click to open the head at full size)")

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = self.cell_at(scene_pos)
        self.hover_text = "" if cell is None else self.cell_text(*cell)
        self.setToolTip(self.hover_text)
        if self.hover_text and self.isVisible():
            QToolTip.showText(QCursor.pos(), self.hover_text, self)
        else:
            QToolTip.hideText()

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return  # the right button opens the export menu
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.tile_clicked.emit(cell[0], cell[1])
