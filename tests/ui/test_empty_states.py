"""Each view with nothing to show says why, in one line, in its own place, and draws no empty axes
(nor exports a figure of them); the view comes back with its first data."""

from __future__ import annotations

import numpy as np

from explorer.ui.panels.hidden import TRACES_HINT


def empty_views(window) -> dict:
    panels = window.panels
    return {"curves": panels["curves"].view_state, "bleu": panels["bleu"].plot_state,
            "hidden": panels["hidden"].views, "traces": panels["hidden"].traces_view,
            "positions": panels["positional"].model_view}


def test_without_a_model_each_view_says_why_then_draws_its_data(make_main_window, qtbot,
                                                                 tiny_workspace):
    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    for name, view in empty_views(window).items():
        assert view.empty and view.view.isHidden(), name
        assert view.message.startswith("Open ") or view.message == TRACES_HINT, name
        assert "\n" not in view.message, name
    panels = window.panels
    assert panels["curves"].plot_items() == {} and panels["bleu"].plot_items() == {}
    assert panels["hidden"].plot_items() == {} and "model" not in panels["positional"].plot_items()

    # a seq2seq GRU: its first evaluation (a loss and a BLEU point) and probe fill the views
    window.controller.set_workspace(tiny_workspace)
    window.show_panel("hidden")  # behind another tab it would hold its draws until raised
    views = empty_views(window)
    qtbot.waitUntil(lambda: not any(views[name].empty for name in ("curves", "bleu", "hidden"))
                    and not window.controller.jobs.busy, timeout=60_000)
    assert {"all", "loss"} <= set(panels["curves"].plot_items())
    assert set(panels["bleu"].plot_items()) == {"bleu"} and not panels["bleu"].details.isHidden()
    assert "heatmap" in panels["hidden"].plot_items()
    # still nothing to draw, each for its reason: no units selected, no table in a GRU
    assert views["traces"].message == TRACES_HINT
    assert views["positions"].message.startswith("No positional table: this model is no "
                                                 "Transformer")


def _draws_data(view) -> bool:
    """Whether a pyqtgraph view draws any data (a curve, points, bars or an image)."""
    import pyqtgraph as pg

    for item in view.scene().items():
        if not item.isVisible():
            continue
        if isinstance(item, pg.PlotDataItem) and item.xData is not None and len(item.xData):
            return True
        if isinstance(item, pg.ScatterPlotItem) and len(item.data):
            return True
        if isinstance(item, pg.ImageItem) and item.image is not None:
            return True
        if isinstance(item, pg.BarGraphItem) and np.size(item.opts.get("width")):
            return True
    return False


def _inside_empty_state(widget) -> bool:
    from explorer.ui.empty_state import EmptyState

    while widget is not None:
        if isinstance(widget, EmptyState) and widget.empty:
            return True
        widget = widget.parentWidget()
    return False


def _view_of(item):
    """The widget a panel's exported item (a PlotItem, a layout, a scene) is drawn in."""
    views = item.views() if hasattr(item, "views") else [item.getViewWidget()]
    return views[0] if views else None


def test_every_registered_panel_without_a_model_says_why_and_draws_no_empty_axes(
        make_main_window, qtbot):
    """A walk over the registry: a new panel is held to it too."""
    import pyqtgraph as pg

    from explorer.panel_registry import PANELS
    from explorer.ui.empty_state import EmptyState

    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    for entry in PANELS:
        panel = window.panels[entry.panel_id]
        if panel.has_content():  # e.g. a diagram that needs no model
            continue
        window.docks[entry.panel_id].raise_()  # what a user sees who brings it to the front
        qtbot.waitUntil(panel.isVisible)
        states = [s for s in panel.findChildren(EmptyState) if s.empty and s.isVisible()]
        assert states, f"{entry.panel_id}: no one-line reason in place of its view"
        for state in states:
            assert state.view.isHidden() and state.label.isVisible(), entry.panel_id
            assert state.message and "\n" not in state.message, entry.panel_id
        empty_axes = [view for view in panel.findChildren(pg.GraphicsView)  # on screen, > 0 px
                      if view.isVisible() and not view.visibleRegion().isEmpty()
                      and not _draws_data(view)]
        assert not empty_axes, f"{entry.panel_id} draws empty axes"
        # nor does its export: no figure of a view inside an empty state
        for name, item in panel.plot_items().items():
            view = _view_of(item)
            assert view is not None and not _inside_empty_state(view), (entry.panel_id, name)
            assert _draws_data(view), (entry.panel_id, name)
