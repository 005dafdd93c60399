"""The default window at 1280 x 800 and 1920 x 1080: every dock's contents fit their dock, no plot
is narrower than its axes need, no label or legend entry is clipped, and no tab bar is painted
over a dock (a newcomer's first look)."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QTextDocument
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QTabBar, QToolButton

from explorer.training.checkpoint import demo_checkpoints
from explorer.ui import dock_layout
from explorer.ui.panels.bleu import PLOT_MIN_LINES
from explorer.ui.plot_style import drawn_labels

MIN_VIEW_PX = (80, 50)  # a plot's data area: room for a readable curve between its axes
MIN_TAB_MARGIN_PX = 4  # each side of a tab's name, so neighbouring names do not run together


@pytest.fixture(scope="module")
def demo():
    demos = demo_checkpoints()
    assert demos, "the demo checkpoints ship with the package"
    return next(path for name, path in demos.items() if "transformer" in name)


def filled(panels) -> bool:
    """Every panel has content; those out of sight (behind a tab) draw what they hold first."""
    for panel in panels:
        if not panel.has_content():
            panel.draw_held()
    return all(panel.has_content() for panel in panels)


def _shown_window(make_main_window, qtbot, monkeypatch, demo, size, tall):
    # the layout follows the screen's height; the offscreen screen is small, so say which
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 0 if tall else 10**6)
    window = make_main_window(create_panels=False)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    window.create_panels()
    window.controller.open_checkpoint(demo)
    qtbot.waitUntil(lambda: filled(window.panels.values()) and not window.controller.jobs.busy,
                    timeout=60_000)
    for panel in window.panels.values():
        panel.flush_pending_draws()
    return window


def _label_text_width(label: QLabel) -> float:
    if label.textFormat() == label.textFormat().RichText or "<" in label.text():
        document = QTextDocument()
        document.setDefaultFont(label.font())
        document.setHtml(label.text())
        document.setDocumentMargin(0)
        return document.idealWidth()
    metrics = QFontMetricsF(label.font())
    return max((metrics.horizontalAdvance(line) for line in label.text().splitlines()), default=0)


def _dropped_tick_labels(plot: pg.PlotItem) -> list[str]:
    """Axes given one label per row or column (setTicks) draw every one in view: pyqtgraph drops
    a label that does not fit its axis, silently."""
    problems = []
    for side in ("left", "bottom"):
        axis = plot.getAxis(side)
        if not axis.isVisible() or axis._tickLevels is None or not axis.style["showValues"]:
            continue
        low, high = sorted(axis.range)
        in_view = [text for level in axis._tickLevels for value, text in level
                   if low <= value <= high]
        drawn = drawn_labels(axis)
        if len(drawn) < len(in_view):
            problems.append(f"{side} axis drops labels: {sorted(set(in_view) - set(drawn))[:5]}")
    return problems


def _problems(dock: QDockWidget) -> list[str]:
    """What a user could not read in `dock` as it is laid out now."""
    panel = dock.widget()
    problems = []
    hint, size = panel.minimumSizeHint(), panel.size()
    if hint.width() > size.width() or hint.height() > size.height():
        problems.append(f"squeezed below its minimum {hint.toTuple()}: {size.toTuple()}")
    for label in panel.findChildren(QLabel):
        if not label.isVisible() or label.wordWrap() or not label.text():
            continue
        room = label.contentsRect().width() - 2 * label.margin()
        if _label_text_width(label) > room + 1:
            problems.append(f"label clipped: {label.text()[:40]!r}")
    for view in panel.findChildren(pg.GraphicsView):
        if not view.isVisible():
            continue
        visible = QRectF(view.viewport().rect())
        for item in view.scene().items():
            if isinstance(item, pg.ColorBarItem) and item.isVisible():
                if not visible.adjusted(-1, -1, 1, 1).contains(item.sceneBoundingRect()):
                    problems.append(f"colour bar cut off: {item.sceneBoundingRect().getRect()} "
                                    f"in {visible.getRect()}")
            elif isinstance(item, pg.PlotItem) and item.isVisible():
                box = item.getViewBox().sceneBoundingRect()
                if box.width() < MIN_VIEW_PX[0] or box.height() < MIN_VIEW_PX[1]:
                    problems.append(f"plot {item.titleLabel.text!r} is {box.width():.0f} x "
                                    f"{box.height():.0f} px")
                problems += _dropped_tick_labels(item)
                for side in ("left", "bottom"):
                    axis = item.getAxis(side)
                    # its geometry: the bounding rect reaches past it for the end labels' overhang
                    placed = axis.parentItem().mapRectToScene(axis.geometry())
                    if axis.isVisible() and not visible.adjusted(-1, -1, 1, 1).contains(placed):
                        problems.append(f"{side} axis of {item.titleLabel.text!r} cut off: "
                                        f"{placed.getRect()} in "
                                        f"{visible.getRect()} of {type(view).__name__}")
            if isinstance(item, pg.LegendItem) and item.isVisible() and item.items:
                legend = item.sceneBoundingRect()
                if not visible.adjusted(-1, -1, 1, 1).contains(legend):
                    problems.append("legend cut off by its view")
                for _, text in item.items:
                    needed = QFontMetricsF(text.item.font()).horizontalAdvance(text.text)
                    if text.sceneBoundingRect().width() + 1 < needed or \
                            not legend.adjusted(-1, -1, 1, 1).contains(text.sceneBoundingRect()):
                        problems.append(f"legend entry clipped: {text.text!r}")
    return problems


@pytest.mark.parametrize("size, tall", [((1280, 800), False), ((1920, 1080), True)],
                         ids=["1280x800", "1920x1080"])
def test_every_dock_fits_its_contents_at_the_default_size(make_main_window, qtbot, monkeypatch,
                                                          demo, size, tall):
    window = _shown_window(make_main_window, qtbot, monkeypatch, demo, size, tall)
    docks = {**window.docks, "training_controls": window.controls_dock}
    problems = {}
    for dock_id, dock in docks.items():
        dock.raise_()  # a tabbed dock is laid out at its group's size once raised
        qtbot.waitUntil(lambda: dock.widget().isVisible() and not dock.visibleRegion().isEmpty())
        dock.widget().grab()  # paint: pyqtgraph lays out its axes and legends as it paints
        found = _problems(dock)
        if found:
            problems[dock_id] = found
    assert not problems, "\n".join(f"{d}: {p}" for d, found in problems.items() for p in found)
    # the BLEU plot reads: squashed to 45 px at 1920 x 1080 its value axis drew no label
    bleu = window.panels["bleu"]
    window.docks["bleu"].raise_()
    bleu.grab()
    assert bleu.plot_widget.height() >= PLOT_MIN_LINES * bleu.table.fontMetrics().height()
    assert len(drawn_labels(bleu.plot.getAxis("left"))) >= 2
    # the tab bars of tabbed docks sit below their groups, over no dock
    for bar in window.findChildren(QTabBar):
        if bar.isVisible() and bar.parent() is window:
            for dock_id, dock in docks.items():
                if dock.isVisible() and not dock.visibleRegion().isEmpty():
                    assert not bar.geometry().intersects(dock.geometry()), (dock_id, bar.geometry())


def test_short_screens_get_full_height_tab_groups_and_tall_ones_two_rows(
        make_main_window, monkeypatch):
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 10**6)
    short = make_main_window(create_panels=False)
    assert short.tabifiedDockWidgets(short.docks["attention"]) and \
        short.docks["beam"] in short.tabifiedDockWidgets(short.docks["attention"])
    assert short.controls_dock in short.tabifiedDockWidgets(short.docks["curves"])
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 0)
    tall = make_main_window(create_panels=False)
    assert tall.docks["beam"] not in tall.tabifiedDockWidgets(tall.docks["attention"])
    assert tall.controls_dock in tall.tabifiedDockWidgets(tall.docks["bleu"])


def test_a_layout_saved_by_an_older_version_gives_way_to_the_default(make_main_window,
                                                                      isolated_settings):
    from explorer.ui.main_window import LAYOUT_VERSION

    old = make_main_window(create_panels=False)
    old.removeDockWidget(old.docks["beam"])
    old.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, old.docks["beam"])
    isolated_settings.setValue(f"{old.layout_key()}/window_state",
                               old.saveState(LAYOUT_VERSION - 1))  # the version before
    isolated_settings.sync()
    fresh = make_main_window(create_panels=False)
    assert not fresh._layout_restored
    assert fresh.dockWidgetArea(fresh.docks["beam"]) == Qt.DockWidgetArea.RightDockWidgetArea
    old.save_settings()  # this version's layout is restored
    again = make_main_window(create_panels=False)
    assert again._layout_restored
    assert again.dockWidgetArea(again.docks["beam"]) == Qt.DockWidgetArea.LeftDockWidgetArea


@pytest.mark.parametrize("tall", [False, True], ids=["1280x800", "1920x1080"])
def test_no_tab_bar_floats_in_the_default_layout(make_main_window, qtbot, monkeypatch, tall):
    """Qt leaves a second dock area's first two-tab bar behind ("Attention | Positional", "Beam |
    Step"): shown, it floated over the training curves. Each dock is on one visible bar, and the
    bars lie along their own docks' bottom edges."""
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 0 if tall else 10**6)
    window = make_main_window(create_panels=False)
    window.resize(*((1920, 1080) if tall else (1280, 800)))
    window.show()
    qtbot.waitExposed(window)
    docks = {id(dock): dock for dock in window.findChildren(QDockWidget)}
    bars = [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.isVisible()]
    assert bars
    on_bars = [bar.tabData(i) for bar in bars for i in range(bar.count())]
    assert len(on_bars) == len(set(on_bars)), "a dock is on two tab bars"
    for bar in bars:
        group = [dock for dock in window.findChildren(QDockWidget)
                 if any(bar.tabData(i) == _address(dock) for i in range(bar.count()))]
        assert group and all(not dock.isFloating() for dock in group)
        raised = next(dock for dock in group if not dock.visibleRegion().isEmpty())
        below = raised.geometry()
        # the bar sits right under its raised dock, as wide as it
        assert abs(bar.geometry().top() - below.bottom()) <= 8, (bar.tabText(0), bar.geometry(), below)
        assert bar.geometry().left() >= below.left() - 2 and bar.geometry().right() <= below.right() + 2
    assert len(docks) >= len(on_bars)


@pytest.mark.parametrize("tall", [False, True], ids=["1280x800", "1920x1080"])
def test_every_tab_shows_its_whole_name(make_main_window, qtbot, monkeypatch, tall):
    """At 1280 x 800 the right column's ten tabs were cut to "At…", "Gradi…", and fourteen then
    scrolled: every tabbed dock is on its bar at once, its name whole, its full title on hover."""
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 0 if tall else 10**6)
    window = make_main_window(create_panels=False)
    window.resize(*((1920, 1080) if tall else (1280, 800)))
    window.show()
    qtbot.waitExposed(window)
    window.create_panels()  # the panels' minimum widths set the columns' widths
    for _ in range(20):  # the docks are laid out again over a few event-loop turns
        QApplication.processEvents()
    docks = {_address(dock): dock for dock in (*window.docks.values(), window.controls_dock)}
    bars = [bar for bar in window.findChildren(QTabBar) if bar.parent() is window and bar.isVisible()]
    on_bars = set()
    for bar in bars:
        assert bar.elideMode() == Qt.TextElideMode.ElideNone
        arrows = [button for button in bar.findChildren(QToolButton) if button.isVisible()]
        assert not arrows, f"the bar of {bar.tabText(0)!r} scrolls: {bar.width()} px"
        metrics = bar.fontMetrics()
        for i in range(bar.count()):
            text, rect = bar.tabText(i), bar.tabRect(i)
            assert bar.rect().contains(rect), f"{text!r} at {rect.getRect()} off its bar {bar.width()} px"
            assert rect.width() >= metrics.horizontalAdvance(text) + 2 * MIN_TAB_MARGIN_PX, text
            dock = docks[bar.tabData(i)]
            assert text == dock.windowTitle()
            panel = window.panels.get(dock.objectName())  # the training controls are no panel
            # the panel named in full on hover: "Hidden" is "Hidden states: ..."
            assert bar.tabToolTip(i) == (dock.toolTip() if panel else text)
            assert panel is None or bar.tabToolTip(i).startswith(panel.TITLE or panel.TOOLTIP)
            on_bars.add(bar.tabData(i))
    tabbed = {_address(dock) for dock in docks.values() if window.tabifiedDockWidgets(dock)}
    assert tabbed and tabbed <= on_bars


def test_a_tab_group_the_user_makes_shows_whole_names(make_main_window, qtbot, monkeypatch):
    """Qt gives a new tab group a bar of its own (a new one or one it keeps), eliding by default;
    whenever a dock moves, the bars are tidied again."""
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 0)  # the curves alone in their row
    window = make_main_window()
    window.resize(1920, 1080)
    window.show()
    qtbot.waitExposed(window)
    for _ in range(20):  # the first show's layout settles
        QApplication.processEvents()
    for bar in window.findChildren(QTabBar):  # Qt's defaults, on the bars it may hand out again
        if bar.parent() is window:
            bar.setElideMode(Qt.TextElideMode.ElideRight)
            bar.setTabToolTip(0, "")
    curves, beam = window.docks["curves"], window.docks["beam"]
    window.tabifyDockWidget(curves, beam)  # a new tab group, as a drag onto the curves makes

    def new_bar() -> QTabBar | None:
        return next((bar for bar in window.findChildren(QTabBar) if bar.isVisible() and {
            _address(curves), _address(beam)} == {bar.tabData(i) for i in range(bar.count())}), None)

    qtbot.waitUntil(lambda: new_bar() is not None)
    qtbot.waitUntil(lambda: new_bar().elideMode() == Qt.TextElideMode.ElideNone)
    assert isinstance(new_bar().style(), dock_layout.CompactTabs)
    assert [new_bar().tabToolTip(i) for i in range(2)] == [curves.toolTip(), beam.toolTip()]


def _address(widget) -> int:
    import shiboken6

    return shiboken6.getCppPointer(widget)[0]


def test_each_screen_size_keeps_its_own_layout(make_main_window, monkeypatch):
    """A layout arranged on a 1280 x 800 laptop is not restored on a 1920 x 1080 monitor (the
    default for that screen is), and comes back on the laptop."""
    from explorer.ui.main_window import MainWindow

    monkeypatch.setattr(MainWindow, "layout_key", lambda self: "layout/1280x800")
    laptop = make_main_window(create_panels=False)
    laptop.removeDockWidget(laptop.docks["beam"])
    laptop.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, laptop.docks["beam"])
    laptop.docks["beam"].show()
    laptop.save_settings()
    monkeypatch.setattr(MainWindow, "layout_key", lambda self: "layout/1920x1080")
    monitor = make_main_window(create_panels=False)
    assert not monitor._layout_restored
    assert monitor.dockWidgetArea(monitor.docks["beam"]) == Qt.DockWidgetArea.RightDockWidgetArea
    monkeypatch.setattr(MainWindow, "layout_key", lambda self: "layout/1280x800")
    again = make_main_window(create_panels=False)
    assert again._layout_restored
    assert again.dockWidgetArea(again.docks["beam"]) == Qt.DockWidgetArea.LeftDockWidgetArea
