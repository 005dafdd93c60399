"""One plot of several in a GraphicsLayoutWidget with nothing to show says why, in one line, in
place of its axes (explorer/ui/empty_state.py does this for a whole view):

    self.lr_message = PlotMessage(self.plots["lr"])
    self.lr_message.set_message("No learning rate recorded: …")   # axes hidden, the line centred
    self.lr_message.set_message(None)                              # the axes and curves again
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGraphicsSimpleTextItem

AXES = ("left", "bottom")


class PlotMessage:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.text = QGraphicsSimpleTextItem()
        self.text.setParentItem(plot)  # in the plot's own pixels, not its data's coordinates
        self.text.setBrush(pg.mkBrush(plot.getAxis("left").textPen().color()))
        self.text.setVisible(False)
        plot.geometryChanged.connect(self._place)

    @property
    def message(self) -> str:
        return self.text.toolTip() if self.text.isVisible() else ""

    def set_message(self, message: str | None) -> None:
        shown = bool(message)
        if shown == self.text.isVisible() and (not shown or message == self.text.text()):
            return
        self.text.setText(message or "")
        self.text.setToolTip(message or "")
        self.text.setVisible(shown)
        for axis in AXES:  # no ticks of an old range, nor a scale of nothing (nor its grid)
            self.plot.showAxis(axis, not shown)
        self._place()

    def _place(self) -> None:
        """Centred in the plot, elided to its width."""
        if not self.text.isVisible():
            return
        box = self.plot.boundingRect()
        font = self.text.font()
        metrics = pg.QtGui.QFontMetricsF(font)
        full = self.text.toolTip()
        self.text.setText(metrics.elidedText(full, Qt.TextElideMode.ElideRight, box.width() - 8))
        rect = self.text.boundingRect()
        self.text.setPos(box.center().x() - rect.width() / 2, box.center().y() - rect.height() / 2)
