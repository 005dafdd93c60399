"""Presentation mode (View ▸ Presentation, F11): one panel, or a lesson step beside its panel,
fills the screen for the lecture hall, in a full-screen window of its own. Fonts of every label, table and plot axis and the width of
every plotted line scale by the panel's zoom (×2 to start, ×1.5 to ×3 with Ctrl+= / Ctrl+-, kept
per panel), heatmaps switch to a high-contrast colour map, and leaving restores the window's
layout exactly (QMainWindow.saveState before == after).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QLabel, QVBoxLayout, QWidget

ZOOMS = (1.5, 2.0, 2.5, 3.0)
DEFAULT_ZOOM = 2.0
RESTORE_ROUNDS = 5
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
        self.screen: QWidget | None = None  # the full-screen window while presenting
        self._placeholder: QLabel | None = None
        self._state = None
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
        """The panel moves into a full-screen window of its own (the lesson's step above it when
        a lesson is open); the main window's docks stay exactly where they are."""
        window = self.window
        panel_id = panel_id or self.current_panel()
        panel = window.panels.get(panel_id)
        if panel is None:
            return
        self.active = panel_id
        self._state = window.saveState()  # a placeholder in the dock may let its splitter move
        dock = window.docks[panel_id]
        self._placeholder = QLabel("On the presentation screen: F11 or Esc brings it back.")
        dock.setWidget(self._placeholder)
        self.screen = QWidget()
        self.screen.setObjectName("presentation")
        self.screen.setWindowTitle(f"{panel.TITLE} — presentation")
        layout = QVBoxLayout(self.screen)
        lesson = getattr(window, "lesson_dock", None)
        if lesson is not None and lesson.session is not None:
            step = QLabel(f"<h2>{lesson.step.title}</h2>{lesson.step.text}")
            step.setWordWrap(True)
            layout.addWidget(step)
        layout.addWidget(panel, stretch=1)
        panel.show()
        for keys, action in (("F11", self.leave), ("Esc", self.leave),
                             ("Ctrl+=", lambda: self.set_zoom(1)), ("Ctrl+-", lambda: self.set_zoom(-1))):
            QShortcut(QKeySequence(keys), self.screen, activated=action)
        self._scale(self.zoom.setdefault(panel_id, DEFAULT_ZOOM))
        self.screen.showFullScreen()

    def leave(self) -> None:
        if not self.on:
            return
        self._unscale()
        panel = self.window.panels[self.active]
        panel.setParent(None)
        self.window.docks[self.active].setWidget(panel)
        panel.show()
        self._placeholder.deleteLater()
        self.screen.close()
        self.screen.deleteLater()
        self.active = None
        # the panel's fonts and size hints come back as posted events; the dock sizes follow once
        # they have been handled, so restore until the layout is the one we left
        for _ in range(RESTORE_ROUNDS):
            QApplication.processEvents()
            self.window.restoreState(self._state)
            if self.window.saveState() == self._state:
                break

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
        # on the presentation window only: the main window's docks keep their sizes
        font = QApplication.instance().font()
        bigger = QFont(font)
        bigger.setPointSizeF(font.pointSizeF() * zoom)
        self.screen.setFont(bigger)
        panel = self.window.panels.get(self.active)
        if panel is None:
            return
        for item in panel.plot_items().values():
            for plot in _plot_items(item):
                self._scale_plot(plot, zoom)

    def _scale_plot(self, plot, zoom: float) -> None:
        for name in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(name)
            tick_font = axis.style.get("tickFont")  # None: pyqtgraph's default, restored as None
            label_font = axis.label.font()
            tick = QFont(tick_font or label_font)
            tick.setPointSizeF(max(tick.pointSizeF(), 8.0) * zoom)
            axis.setStyle(tickFont=tick)
            axis.label.setFont(tick)
            self._undo.append(lambda a=axis, t=tick_font, f=label_font: (
                a.setStyle(tickFont=t), a.label.setFont(f)))
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
