"""Presentation mode (View ▸ Presentation, F11): one panel, or a lesson step beside its panel,
fills the screen for the lecture hall. Fonts of every label, table and plot axis and the width of
every plotted line scale by the panel's zoom (×2 to start, ×1.5 to ×3 with Ctrl+= / Ctrl+-, kept
per panel), heatmaps switch to a high-contrast colour map, and leaving restores the window's
layout exactly (QMainWindow.saveState before == after).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

ZOOMS = (1.5, 2.0, 2.5, 3.0)
DEFAULT_ZOOM = 2.0
HIGH_CONTRAST_MAP = "inferno"  # dark to bright yellow: readable on a projector


def _plot_items(item) -> list:
    if isinstance(item, pg.PlotItem):
        return [item]
    if isinstance(item, pg.GraphicsLayout):
        return [i for i in item.items if isinstance(i, pg.PlotItem)]
    return []


class Presentation:
    def __init__(self, window) -> None:
        self.window = window
        self.zoom: dict[str, float] = {}  # panel id -> its zoom, kept between presentations
        self.active: str | None = None  # the panel on show
        self._state = None
        self._maximized = False
        self._undo: list = []  # callables restoring what scaling changed

    @property
    def on(self) -> bool:
        return self.active is not None

    def toggle(self, panel_id: str | None = None) -> None:
        self.leave() if self.on else self.enter(panel_id)

    def current_panel(self) -> str | None:
        """The panel whose dock has the focus, else the first visible one."""
        focus = QApplication.focusWidget()
        for panel_id, dock in self.window.docks.items():
            if focus is not None and dock.isAncestorOf(focus):
                return panel_id
        visible = [p for p, d in self.window.docks.items() if d.isVisible() and not d.visibleRegion().isEmpty()]
        return visible[0] if visible else next(iter(self.window.docks))

    def enter(self, panel_id: str | None = None) -> None:
        window = self.window
        panel_id = panel_id or self.current_panel()
        self._state = window.saveState()
        self._maximized = window.isFullScreen()
        self.active = panel_id
        lesson = getattr(window, "lesson_dock", None)
        keep = {window.docks[panel_id]} | ({lesson} if lesson is not None and lesson.isVisible() else set())
        for dock in window.findChildren(pg.QtWidgets.QDockWidget):
            if dock not in keep:
                dock.hide()
        window.docks[panel_id].show()
        window.docks[panel_id].raise_()
        self._scale(self.zoom.setdefault(panel_id, DEFAULT_ZOOM))
        window.showFullScreen()

    def leave(self) -> None:
        if not self.on:
            return
        self._unscale()
        window = self.window
        if not self._maximized:
            window.showNormal()
        window.restoreState(self._state)
        self.active = None

    def set_zoom(self, step: int) -> None:
        """Ctrl+= / Ctrl+-: the active panel's zoom one notch up or down (×1.5 .. ×3)."""
        if not self.on:
            return
        now = self.zoom[self.active]
        index = min(range(len(ZOOMS)), key=lambda i: abs(ZOOMS[i] - now))
        self.zoom[self.active] = ZOOMS[max(0, min(len(ZOOMS) - 1, index + step))]
        self._unscale()
        self._scale(self.zoom[self.active])

    # -- scaling --------------------------------------------------------------------------------

    def _scale(self, zoom: float) -> None:
        app = QApplication.instance()
        font = app.font()
        self._undo.append(lambda f=QFont(font): app.setFont(f))
        bigger = QFont(font)
        bigger.setPointSizeF(font.pointSizeF() * zoom)
        app.setFont(bigger)
        panel = self.window.panels.get(self.active)
        if panel is None:
            return
        for item in panel.plot_items().values():
            for plot in _plot_items(item):
                self._scale_plot(plot, zoom)

    def _scale_plot(self, plot, zoom: float) -> None:
        for name in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(name)
            old = QFont(axis.style.get("tickFont") or QFont())
            tick = QFont(old)
            tick.setPointSizeF(max(old.pointSizeF(), 8.0) * zoom)
            axis.setStyle(tickFont=tick)
            axis.label.setFont(tick)
            self._undo.append(lambda a=axis, f=old: (a.setStyle(tickFont=f), a.label.setFont(f)))
        for data in plot.listDataItems():
            pen = data.opts.get("pen") if hasattr(data, "opts") else None
            if pen is None:
                continue
            old_pen = pg.mkPen(pen)
            wide = pg.mkPen(old_pen)
            wide.setWidthF(max(old_pen.widthF(), 1.0) * zoom)
            data.setPen(wide)
            self._undo.append(lambda d=data, p=old_pen: d.setPen(p))
        for image in [i for i in plot.items if isinstance(i, pg.ImageItem)]:
            old_lut = image.lut
            image.setLookupTable(pg.colormap.get(HIGH_CONTRAST_MAP).getLookupTable(nPts=256))
            self._undo.append(lambda i=image, lut=old_lut: i.setLookupTable(lut))

    def _unscale(self) -> None:
        while self._undo:
            self._undo.pop()()
