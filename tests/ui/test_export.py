"""Exporting panels: PNG at the chosen size and DPI and not blank, SVG that parses, CSV of the numbers."""

import csv
import xml.etree.ElementTree as ElementTree

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

from explorer.errors import UserError
from explorer.ui.bus import AppBus
from explorer.ui.export import export_all, export_panel, install_export_menu
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.panels.base import Panel
from explorer.ui.panels.positional import PositionalPanel
from PySide6.QtWidgets import QVBoxLayout



class MatrixPanel(Panel):
    """A minimal panel: one heatmap and one line plot, as any panel of the app exposes them."""

    PANEL_ID = "demo"
    TITLE = "Demo"

    def __init__(self, bus):
        super().__init__(bus)
        self.heatmap = HeatmapWidget(levels=None)
        self.matrix = np.arange(12, dtype=float).reshape(3, 4) / 11
        self.heatmap.set_matrix(self.matrix, ["q0", "q1", "q2"], ["k0", "k1", "k2", "k3"])
        self.lines = pg.PlotWidget()
        self.lines.plot([0, 1, 2], [1.0, 0.5, 0.25], pen="y")
        layout = QVBoxLayout(self)
        layout.addWidget(self.heatmap)
        layout.addWidget(self.lines)
        install_export_menu(self)

    def has_content(self):
        return True

    def plot_items(self):
        return {"Heat Map": self.heatmap.ci, "lines": self.lines.getPlotItem()}

    def tables(self):
        return {"values": (["row", "a", "b"], [["x", 0.1, 1 / 3], ["y", 2, float("nan")]])}


def shown(qtbot, panel, size=(600, 500)):
    qtbot.addWidget(panel)
    panel.resize(*size)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def test_png_svg_csv_with_clear_names(qtbot, tmp_path):
    panel = shown(qtbot, MatrixPanel(AppBus()))
    written = panel.export(tmp_path / "out", width=640, dpi=200)
    names = sorted(p.name for p in written)
    assert names == ["demo_heat_map.png", "demo_heat_map.svg", "demo_lines.png", "demo_lines.svg", "demo_values.csv"]
    image = QImage(str(tmp_path / "out" / "demo_heat_map.png"))
    assert image.width() == 640
    source = panel.heatmap.ci.sceneBoundingRect()
    assert image.height() == pytest.approx(640 * source.height() / source.width(), abs=2)
    assert round(image.dotsPerMeterX() * 0.0254) == 200
    colours = {image.pixel(x, y) for x in range(0, image.width(), 5) for y in range(0, image.height(), 5)}
    assert len(colours) > 10
    root = ElementTree.parse(tmp_path / "out" / "demo_lines.svg").getroot()
    assert root.tag.endswith("svg") and list(root.iter("{http://www.w3.org/2000/svg}path"))
    with open(tmp_path / "out" / "demo_values.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [["row", "a", "b"], ["x", "0.1", repr(1 / 3)], ["y", "2", "nan"]]


def test_dpi_alone_scales_the_on_screen_size(qtbot, tmp_path):
    panel = shown(qtbot, MatrixPanel(AppBus()))
    (path,) = export_panel(panel, tmp_path, ("png",), dpi=192)[:1]
    on_screen = panel.heatmap.ci.sceneBoundingRect().width()
    assert QImage(str(path)).width() == pytest.approx(2 * on_screen, abs=2)


def test_unknown_format_and_context_menu(qtbot, tmp_path):
    panel = shown(qtbot, MatrixPanel(AppBus()))
    with pytest.raises(UserError):
        export_panel(panel, tmp_path, ("gif",))
    menu = panel.lines.getPlotItem().getViewBox().menu
    assert "Export panel…" in [action.text() for action in menu.actions()]


def test_export_all_writes_every_panel_into_one_folder(qtbot, tmp_path):
    bus = AppBus()
    panels = [shown(qtbot, MatrixPanel(bus)), shown(qtbot, PositionalPanel(bus), (1000, 700))]
    written = export_all(panels, tmp_path, ("png", "csv"))
    names = {p.name for p in written}
    assert {"demo_heat_map.png", "positional_matrix.png", "positional_matrix.csv",
            "positional_relative.png", "positional_curves.png"} <= names
    assert all(p.parent == tmp_path for p in written)
