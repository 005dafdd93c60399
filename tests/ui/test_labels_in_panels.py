"""One numbering in every panel and export: "layer 1" and "head 1" are the first ones, in the
attention panel (boxes, titles, model view, CSV), the step-through picker and gradient flow."""

import csv

from PySide6.QtCore import QPointF

from explorer.ui.panels.decoding_widgets import AttentionPicker
from explorer.ui.plot_style import drawn_labels

from test_attention_panel import char_workspace, load, make_panel


def test_attention_panel_and_its_csv_number_layers_and_heads_from_one(qtbot, tmp_path):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("gpt"))  # 2 layers x 2 heads
    layers = [panel.layer_box.itemText(i) for i in range(panel.layer_box.count())]
    heads = [panel.head_box.itemText(i) for i in range(panel.head_box.count())]
    assert layers == ["layer 1", "layer 2"]
    assert heads == ["mean of heads", "head 1", "head 2"]
    panel.select("decoder", 1, 0)
    assert "layer 2, head 1" in panel.heatmap.plot.titleLabel.text
    panel.model_view_box.setChecked(True)
    grid = panel.grid  # one mosaic: layers labelled down the left, heads along the top
    qtbot.waitUntil(lambda: drawn_labels(grid.plot.getAxis("left")) == ["layer 1", "layer 2"])
    assert drawn_labels(grid.plot.getAxis("top")) == ["head 1", "head 2"]
    x, y, _, _ = grid.tile_rect(1, 0)
    grid._on_mouse_moved(grid.image.mapToScene(QPointF(x + 0.5, y + 0.5)))
    assert grid.toolTip().startswith("layer 2 · head 1")
    panel.export(tmp_path, ("csv",))
    with open(tmp_path / "attention_all_maps.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {(row["layer"], row["head"]) for row in rows} == {("1", "1"), ("1", "2"), ("2", "1"),
                                                             ("2", "2")}


def test_step_through_picker_says_layer_and_head(qtbot):
    picker = AttentionPicker()
    qtbot.addWidget(picker)
    picker.set_shape(2, 4)
    assert [picker.layer_box.itemText(i) for i in range(2)] == ["layer 1", "layer 2"]
    assert picker.layer_box.currentText() == "layer 2"  # the top layer
    assert picker.head_box.itemText(0) == "mean of heads" and picker.head_box.itemText(4) == "head 4"
