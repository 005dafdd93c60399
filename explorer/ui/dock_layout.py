"""The main window's docks: one per registered panel (explorer.ui.panels.PANELS), placed by its
dock group. The docks exist from the start; the panels move into them after the first paint.

The default layout is data built from the groups: per dock area, its rows top to bottom, each a
tab group of dock ids (the first raised), and the share of the height each row gets. The training
group gets the left column (curves on top; the others tabbed with the training settings below, as
Train, Pause, Step and Stop are on the toolbar); on the right the inspect group sits above the
decoding group. On a screen under TALL_SCREEN_PX (1280 x 800) a heatmap, a tree or five curves
would get too little height in two rows, so each column is one full-height tab group.

Every tab shows its panel's whole name (tidy_tab_bars): no elision, and no more padding beside the
names than lets them all fit their bar (CompactTabs), so the right column's fourteen tabs fit its
904 px at 1280 x 800; the panel's full title is the tab's tooltip.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QProxyStyle,
    QStyle,
    QTabBar,
)

from explorer.ui.panels import PANELS

CONTROLS_ID = "training_controls"
TALL_SCREEN_PX = 1000
# The left column's share of the width; the right column's panels need ~850 px for their
# controls, which the dock splitter keeps on a 1280 px screen.
LEFT_COLUMN = 0.42
TALL_SHARES = {"left": (0.58, 0.42), "right": (0.55, 0.45)}
# The least padding beside a tab's name (Fusion's is 24 px) that still reads as separate tabs.
# The fourteen names of the right column take 703 of its 904 px at 1280 x 800 (9 pt Sans): 14 px
# a tab fits them; down to 8 px, a font 10 % larger would too.
MIN_TAB_PADDING_PX = 8
AREAS = {"left": Qt.DockWidgetArea.LeftDockWidgetArea,
         "right": Qt.DockWidgetArea.RightDockWidgetArea}


def create_docks(window: QMainWindow) -> dict[str, QDockWidget]:
    """One dock per panel, named by its id, holding a placeholder until the panel is built."""
    docks = {}
    for entry in PANELS:
        dock = QDockWidget(entry.tab or entry.panel_id.capitalize(), window)
        dock.setObjectName(entry.panel_id)
        placeholder = QLabel("Loading…")
        placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        dock.setWidget(placeholder)
        docks[entry.panel_id] = dock
    return docks


def default_layout(tall: bool) -> tuple:
    """((area, rows, shares), ...) from the registry's groups; a group the layout does not know
    joins the right column's last tab group."""
    groups: dict[str, tuple[str, ...]] = {}
    for entry in PANELS:
        groups[entry.group] = groups.get(entry.group, ()) + (entry.panel_id,)
    training = groups.pop("training", ())
    inspect, decoding = groups.pop("inspect", ()), groups.pop("decoding", ())
    decoding += tuple(panel_id for members in groups.values() for panel_id in members)
    if tall and training and inspect and decoding:
        return (("left", ((training[0],), training[1:] + (CONTROLS_ID,)), TALL_SHARES["left"]),
                ("right", (inspect, decoding), TALL_SHARES["right"]))
    return (("left", (training + (CONTROLS_ID,),), (1.0,)),
            ("right", (inspect + decoding,), (1.0,)))


def arrange_default_layout(window: QMainWindow, docks: dict[str, QDockWidget], tall: bool) -> tuple:
    """Place `docks` (the panels' and the training controls') by `default_layout(tall)`; -> it."""
    layout = default_layout(tall)
    for area_name, rows, _ in layout:
        firsts = [docks[group[0]] for group in rows]
        window.addDockWidget(AREAS[area_name], firsts[0])
        for above, below in zip(firsts, firsts[1:]):
            window.splitDockWidget(above, below, Qt.Orientation.Vertical)
        for group in rows:
            for dock_id in group[1:]:
                window.tabifyDockWidget(docks[group[0]], docks[dock_id])
            docks[group[0]].raise_()
    tidy_tab_bars(window)
    return layout


def tidy_tab_bars(window: QMainWindow) -> None:
    """After every arrangement of the docks: the stale tab bars hidden, and on the others every
    panel's name whole, its full title (the dock's tooltip, once the panel is built) on hover."""
    docks = {shiboken6.getCppPointer(dock)[0]: dock for dock in window.findChildren(QDockWidget)}
    for bar in hide_stale_tab_bars(window):
        if not isinstance(bar.style(), CompactTabs):
            bar.setStyle(CompactTabs(bar))
        # a group with more tabs than fit (a larger font, a narrower window) scrolls, never elides
        bar.setElideMode(Qt.TextElideMode.ElideNone)
        bar.setUsesScrollButtons(True)
        for i in range(bar.count()):
            dock = docks.get(bar.tabData(i))
            if dock is not None:
                bar.setTabToolTip(i, dock.toolTip() or dock.windowTitle())


def keep_tab_bars_tidy(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """Tidy the tab bars again whenever a dock moves (a tab group the user makes reads whole
    too), once per event-loop turn however many docks moved."""
    timer = QTimer(window)
    timer.setSingleShot(True)
    timer.timeout.connect(lambda: tidy_tab_bars(window))
    for dock in docks.values():
        dock.dockLocationChanged.connect(lambda _area: timer.start(0))


def hide_stale_tab_bars(window: QMainWindow) -> list[QTabBar]:
    """Hide the tab bars Qt left behind; -> the others. Tabifying docks into a second dock area
    leaves that area's first two-tab bar ("Attention | Positional", "Beam | Step") in the window,
    unused by the layout, and the window's first show paints it floating over another dock (Qt
    6.11). Each dock belongs to one tab group, so a bar whose docks are all on a larger bar is
    such a leftover."""
    bars = [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.count()]
    docks_on = {id(bar): {bar.tabData(i) for i in range(bar.count())} for bar in bars}
    kept = []
    for bar in bars:
        if any(docks_on[id(bar)] < docks_on[id(other)] for other in bars):
            bar.hide()
        else:
            kept.append(bar)
    return kept


def apply_default_sizes(window: QMainWindow, docks: dict[str, QDockWidget], layout: tuple) -> None:
    """The layout's proportions at the window's current size."""
    width, height = window.width(), window.height()
    columns = [docks[rows[0][0]] for _, rows, _ in layout]
    left_width = round(width * LEFT_COLUMN)
    window.resizeDocks(columns, [left_width, width - left_width], Qt.Orientation.Horizontal)
    for _, rows, shares in layout:
        if len(rows) > 1:
            window.resizeDocks([docks[group[0]] for group in rows],
                               [round(height * share) for share in shares], Qt.Orientation.Vertical)


class CompactTabs(QProxyStyle):
    """The application's style, with no more padding beside a tab's name than lets every name on
    the bar fit its width, down to MIN_TAB_PADDING_PX; owned by its tab bar."""

    def __init__(self, bar: QTabBar) -> None:
        super().__init__()
        self.setParent(bar)

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        padding = super().pixelMetric(metric, option, widget)
        if metric != QStyle.PixelMetric.PM_TabBarTabHSpace or not isinstance(widget, QTabBar):
            return padding
        metrics, count = widget.fontMetrics(), widget.count()
        names = sum(metrics.size(Qt.TextFlag.TextShowMnemonic, widget.tabText(i)).width()
                    for i in range(count))
        fits = (widget.width() - names) // max(count, 1) - 1  # a pixel a tab for the rounding
        return max(MIN_TAB_PADDING_PX, min(padding, fits))
