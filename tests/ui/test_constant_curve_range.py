"""A constant curve (a fixed learning rate) is drawn in a range around its value, with ticks
that read it, not as a flat line on pyqtgraph's ±0.5 axis whose only tick says "0"."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg


def test_a_constant_learning_rate_gets_a_range_around_its_value(qtbot):
    from explorer.ui.plot_style import SteadyViewBox, readable_axes

    widget = pg.PlotWidget(viewBox=SteadyViewBox(), axisItems=readable_axes("left", "bottom"))
    qtbot.addWidget(widget)
    widget.resize(300, 200)
    widget.plot(np.arange(50.0), np.full(50, 1e-3))
    widget.show()
    qtbot.waitExposed(widget)
    view = widget.getPlotItem().getViewBox()
    view.updateAutoRange()
    low, high = view.viewRange()[1]
    assert 0.85e-3 <= low < 1e-3 < high <= 1.15e-3
    ticks = widget.getPlotItem().getAxis("left").tickValues(low, high, 200)
    assert any(len(values) for _, values in ticks)  # ticks inside the range, none of them at 0
    assert all(v > 0 for _, values in ticks for v in values)


def test_a_step_axis_has_no_ticks_between_whole_steps(qtbot):
    # one point at step 0 gets pyqtgraph's ±0.5 range: "-0.4 -0.2 0 0.2 0.4" on a step axis
    from explorer.ui.plot_style import readable_axes

    widget = pg.PlotWidget(axisItems=readable_axes("left", "bottom", whole=("bottom",)))
    qtbot.addWidget(widget)
    widget.resize(300, 200)
    widget.plot([0.0], [12.5], symbol="o")
    widget.show()
    qtbot.waitExposed(widget)
    step_axis = widget.getPlotItem().getAxis("bottom")
    value_axis = widget.getPlotItem().getAxis("left")
    for low, high in ((-0.5, 0.5), (0.0, 3.0), (-1.0, 7.0), (0.0, 120_000.0)):
        values = [v for _, level in step_axis.tickValues(low, high, 280) for v in level]
        assert values and all(v == round(v) for v in values), (low, high, values)
    assert 1 in [v for _, level in step_axis.tickValues(0.0, 3.0, 280) for v in level]
    # a plain axis still divides a unit
    fractions = [v for _, level in value_axis.tickValues(-0.5, 0.5, 280) for v in level]
    assert any(v != round(v) for v in fractions)
