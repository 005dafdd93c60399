"""The app follows the system's light or dark palette: plot backgrounds, text and legends."""

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QColor, QPalette

from explorer.ui.app import apply_theme
from explorer.ui.plot_style import add_legend


@pytest.fixture
def dark_palette(qapp):
    light = qapp.palette()
    dark = QPalette(light)
    for role, colour in ((QPalette.ColorRole.Window, "#202124"), (QPalette.ColorRole.Base, "#17181a"),
                         (QPalette.ColorRole.Text, "#e8eaed"), (QPalette.ColorRole.WindowText, "#e8eaed")):
        dark.setColor(role, QColor(colour))
    qapp.setPalette(dark)
    yield dark
    qapp.setPalette(light)
    apply_theme(qapp)


def test_plots_old_and_new_and_legends_take_the_dark_palette(qapp, qtbot, dark_palette):
    existing = pg.PlotWidget()
    qtbot.addWidget(existing)
    apply_theme(qapp)  # what a change of the system's colour scheme calls
    created = pg.PlotWidget()
    qtbot.addWidget(created)
    for widget in (existing, created):
        assert widget.backgroundBrush().color().name() == "#17181a"
    axis_text = created.getPlotItem().getAxis("left").textPen().color()
    assert axis_text.lightness() > 200
    legend = add_legend(created.getPlotItem())
    created.getPlotItem().plot([0, 1], [0, 1], name="loss")
    assert legend.brush().color().lightness() < 64
    assert legend.labelTextColor().lightness() > 200
