"""Plot styling shared by the panels, so that every plot reads the same in light and dark themes."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication


def _palette_color(role: QPalette.ColorRole, fallback: str) -> QColor:
    app = QApplication.instance()
    return QColor(app.palette().color(role)) if app is not None else QColor(fallback)


def add_legend(plot: pg.PlotItem, offset=(-10, 10), text_size: str = "9pt") -> pg.LegendItem:
    """A legend on the theme's own background (mostly opaque, so the curves under it do not
    clutter the labels) with a thin border and the theme's text colour."""
    background = _palette_color(QPalette.ColorRole.Base, "white")
    background.setAlpha(215)
    text = _palette_color(QPalette.ColorRole.Text, "black")
    border = QColor(text)
    border.setAlpha(90)
    return plot.addLegend(offset=offset, brush=pg.mkBrush(background), pen=pg.mkPen(border),
                          labelTextColor=text, labelTextSize=text_size)
