"""One plot of several in a GraphicsLayoutWidget with nothing to show says why, in one line
(wrapped where the plot is narrower), in place of its axes (explorer/ui/empty_state.py does this
for a whole view):

    self.lr_message = PlotMessage(self.plots["lr"])
    self.lr_message.set_message("No steps yet: …")   # axes hidden, the line centred
    self.lr_message.set_message(None)                              # the axes and curves again
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QGraphicsTextItem

from explorer.ui.plot_style import theme_text

AXES = ("left", "bottom")


class PlotMessage:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.text = QGraphicsTextItem()
        self.text.setParentItem(plot)  # in the plot's own pixels, not its data's coordinates
        self.text.document().setDefaultTextOption(QTextOption(Qt.AlignmentFlag.AlignCenter))
        self.text.setVisible(False)
        plot.geometryChanged.connect(self._place)

    @property
    def message(self) -> str:
        return self.text.toPlainText() if self.text.isVisible() else ""

    def set_message(self, message: str | None) -> None:
        shown = bool(message)
        if shown == self.text.isVisible() and (not shown or message == self.text.toPlainText()):
            return
        self.text.setPlainText(message or "")
        self.text.setDefaultTextColor(pg.mkColor(theme_text()))  # the theme on show now
        self.text.setVisible(shown)
        for axis in AXES:  # no ticks of an old range, nor a scale of nothing (nor its grid)
            self.plot.showAxis(axis, not shown)
        self._place()

    def _place(self) -> None:
        """Centred in the plot: one line where the plot is wide enough, wrapped where not (never
        cut)."""
        if not self.text.isVisible():
            return
        box = self.plot.boundingRect()
        self.text.setTextWidth(max(box.width() - 8, 40))
        rect = self.text.boundingRect()
        self.text.setPos(box.center().x() - rect.width() / 2, box.center().y() - rect.height() / 2)
