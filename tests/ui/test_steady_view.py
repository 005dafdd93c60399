"""SteadyViewBox: live curves whose axes move in steps, and the curves' redraw budget."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from explorer.ui.plot_style import SteadyViewBox


def grow_and_count_range_changes(qtbot, view_box, sizes):
    """Feed a loss-like curve that grows to each of `sizes` points; after each, settle the auto-range
    as a paint would. Returns the number of range changes and the (view range, data) of each."""
    widget = pg.PlotWidget(viewBox=view_box)
    qtbot.addWidget(widget)
    widget.resize(400, 300)
    widget.show()
    qtbot.waitExposed(widget)
    curve = widget.plot()
    changes = []
    view_box.sigRangeChanged.connect(lambda *_: changes.append(1))
    seen = []
    for n in sizes:
        x = np.arange(1, n + 1, dtype=float)
        y = 4.0 / np.sqrt(x) + 0.05 * np.sin(x)
        curve.setData(x, y)
        widget.scene().prepareForPaint()
        seen.append((view_box.viewRange(), x, y))
    return len(changes), seen, widget, curve


def test_the_range_holds_while_the_data_grow_inside_it_and_always_shows_every_point(qtbot):
    sizes = list(range(10, 2001, 10))  # 200 redraws of a growing training run
    plain, _, _, _ = grow_and_count_range_changes(qtbot, pg.ViewBox(), sizes)
    steady, seen, _, _ = grow_and_count_range_changes(qtbot, SteadyViewBox(), sizes)
    assert plain >= len(sizes) - 1  # pyqtgraph's own auto-range moves at every redraw
    assert steady <= plain / 4, (steady, plain)
    for (x_range, y_range), x, y in seen:
        assert x_range[0] <= x.min() and x.max() <= x_range[1]
        assert y_range[0] <= y.min() and y.max() <= y_range[1]
        # headroom, not waste: the data fill most of the view
        assert x.max() - x.min() >= 0.6 * (x_range[1] - x_range[0])
        assert y.max() - y.min() >= 0.6 * (y_range[1] - y_range[0])


def test_the_range_fits_again_when_the_data_shrink(qtbot):
    view_box = SteadyViewBox()
    _, seen, widget, curve = grow_and_count_range_changes(qtbot, view_box, [1000])
    curve.setData([1.0, 2.0, 3.0], [0.5, 0.4, 0.45])  # a new run replaces the long one
    widget.scene().prepareForPaint()
    (x_range, y_range) = view_box.viewRange()
    assert x_range[1] < 10 and y_range[1] < 1


def test_a_zoom_by_the_user_stays_until_auto_range_is_asked_for(qtbot):
    view_box = SteadyViewBox()
    _, _, widget, curve = grow_and_count_range_changes(qtbot, view_box, [100])
    view_box.setXRange(10, 20, padding=0)  # what a mouse zoom does: auto-range goes off
    curve.setData(np.arange(1, 501, dtype=float), np.ones(500))
    widget.scene().prepareForPaint()
    assert view_box.viewRange()[0] == pytest.approx([10, 20])
    view_box.enableAutoRange()  # the "A" button
    widget.scene().prepareForPaint()
    x_range = view_box.viewRange()[0]
    assert x_range[0] <= 1 and 500 <= x_range[1]


def test_the_curves_redraw_less_often_when_a_redraw_costs_more(qtbot):
    from explorer.ui.bus import AppBus
    from explorer.ui.panels import curves

    panel = curves.TrainingCurvesPanel(AppBus())
    qtbot.addWidget(panel)
    panel.show()
    panel.view.last_paint_s = 0.0
    panel.redraw()
    assert panel._schedule_redraw.timeout() >= curves.REDRAW_INTERVAL_MS
    assert panel._schedule_redraw.timeout() < curves.REDRAW_INTERVAL_MS + 200  # an empty redraw
    panel.view.last_paint_s = 0.015  # a big view on a slow machine: 15 ms a paint
    panel.redraw()
    assert panel._schedule_redraw.timeout() >= min(0.015 / curves.REDRAW_BUDGET * 1000,
                                                    curves.MAX_REDRAW_INTERVAL_MS)
    assert panel._schedule_redraw.timeout() > curves.REDRAW_INTERVAL_MS + 200
    panel.view.last_paint_s = 10.0
    panel.redraw()
    assert panel._schedule_redraw.timeout() == curves.MAX_REDRAW_INTERVAL_MS


def test_the_curves_drop_their_headroom_when_training_stops(qtbot):
    from explorer.ui.bus import AppBus
    from explorer.events import StepMetrics
    from explorer.ui.panels.curves import TrainingCurvesPanel

    def steps(start, count):
        return [StepMetrics(s, 4.0 / s**0.5, 1e-3, 1.0, 1.0, 100, 5e4, 0.0)
                for s in range(start, start + count)]

    bus = AppBus()
    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    qtbot.waitExposed(panel)
    view_box = panel.plots["loss"].getViewBox()
    bus.step_metrics.emit(steps(1, 100))
    panel.redraw()
    bus.step_metrics.emit(steps(101, 20))  # past the range: it grows with headroom
    panel.redraw()
    assert view_box.viewRange()[0][1] > 140
    bus.state.set_training("stopped")
    panel.view.scene().prepareForPaint()
    x_range = view_box.viewRange()[0]
    assert x_range[0] <= 1 and 120 <= x_range[1] < 130  # every step, and only pyqtgraph's padding
