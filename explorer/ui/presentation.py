"""Presentation mode (View ▸ Presentation, F11): one panel, or a lesson step beside its panel,
fills the screen for the lecture hall, in a full-screen window of its own. Every font (axis ticks
and titles, plot titles, legends, text in plots, labels, tables) and every plotted line scales by
the panel's zoom (×2 to start, ×1.5 to ×3 with Ctrl+= / Ctrl+-, kept per panel), heatmaps switch
to a high-contrast colour map (explorer.ui.presentation_scale), and leaving restores the window's
layout exactly (QMainWindow.saveState before == after)."""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QTimer
from PySide6.QtGui import QFont, QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QLabel, QLayout, QVBoxLayout, QWidget

from explorer.ui.presentation_scale import Scaling

ZOOMS = (1.5, 2.0, 2.5, 3.0)
DEFAULT_ZOOM = 2.0
RESTORE_ROUNDS = 5
RESCALE_EVERY_MS = 300  # live panels draw new items (tokens, curves): scale those too


class Presentation:
    def __init__(self, window) -> None:
        self.window = window
        self.zoom: dict[str, float] = {}  # panel id -> its zoom, kept between presentations
        self.active: str | None = None  # the panel on show
        self.screen: QWidget | None = None  # the full-screen window while presenting
        self._placeholder: QLabel | None = None
        self._state = None
        self.scaling: Scaling | None = None
        self._rescale = QTimer(window, interval=RESCALE_EVERY_MS)
        self._rescale.timeout.connect(self.rescale)

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
            step = QLabel(f"<h2>{escape(lesson.step.title)}</h2>{escape(lesson.step.text)}")
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
        _forget_size_hints(panel)
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
        self.scaling = Scaling(self.screen, zoom)
        self.rescale()
        self._rescale.start()

    def rescale(self) -> None:
        """Scale what the panel drew since the last pass (the timer calls it while presenting)."""
        if self.scaling is not None:
            self.scaling.apply()

    def _unscale(self) -> None:
        self._rescale.stop()
        if self.scaling is not None:
            # the normal font first: a table's rows cannot be set lower than its header's
            # least height, which follows the font
            self.screen.setFont(QApplication.instance().font())
            self.scaling.undo()
            self.scaling = None


def _forget_size_hints(panel: QWidget) -> None:
    """Make every layout under `panel` recompute its size hints from the normal fonts. Its nested
    layouts keep the minimum sizes measured on the screen (the fonts change back while the panel
    has no parent, which invalidates none of them), and the dock, given the examples panel's
    ×2 minimum width, widened the main window: restoreState could not give that layout back."""
    for widget in [panel, *panel.findChildren(QWidget)]:
        widget.updateGeometry()  # the cached size hints of the layout item that holds it
        if widget.layout() is not None:
            _invalidate(widget.layout())


def _invalidate(layout: QLayout) -> None:
    for index in range(layout.count()):
        inner = layout.itemAt(index).layout()
        if inner is not None:
            _invalidate(inner)
    layout.invalidate()
