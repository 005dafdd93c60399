"""The attention panel: orientation (rows are queries), labels, hover, every architecture, live update."""

import numpy as np
import torch
from PySide6.QtCore import QPointF

from explorer.analysis.probe import probe
from explorer.data.tasks import make_task
from explorer.data.tokenizers import CharTokenizer
from explorer.events import AttentionSnapshot, ProbeSnapshot
from explorer.ui.bus import AppBus
from explorer.ui.panels.attention import MEAN_OF_HEADS, AttentionPanel
from explorer.workspace import Workspace
from models import build_model, make_config


TINY_TRANSFORMER = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0)


def char_workspace(family, task="copy", **overrides):
    torch.manual_seed(0)
    data = make_task(task, n_train=20, n_val=4, n_test=2)
    texts = [s for pair in data.train + data.val for s in pair]
    tokenizer = CharTokenizer.train(texts)
    sizes = dict(vocab_size=tokenizer.vocab_size)
    if family in ("seq2seq", "transformer"):
        sizes["src_vocab_size"] = tokenizer.vocab_size
    preset = TINY_TRANSFORMER if family in ("transformer", "gpt", "bert") else {}
    config = make_config(family, "tiny", **{**preset, **sizes, **overrides})
    src_tokenizer = tokenizer if family in ("seq2seq", "transformer") else None
    return Workspace(build_model(config), tokenizer, src_tokenizer, task=task, data=data)


def make_panel(qtbot):
    bus = AppBus()
    panel = AttentionPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(700, 600)
    panel.show()
    return bus, panel


def load(qtbot, bus, panel, workspace):
    bus.set_workspace(workspace)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=10_000)


def test_handcrafted_map_rows_are_queries_and_labels_follow(qtbot):
    bus, panel = make_panel(qtbot)
    weights = np.array([[[0.7, 0.2, 0.1, 0.0], [0.0, 0.1, 0.8, 0.1], [0.05, 0.05, 0.1, 0.8]]])
    snapshot = ProbeSnapshot(
        step=7, source="abc", target="xy",
        attention=[AttentionSnapshot("cross", 0, weights, ["x", "y", "<eos>"], ["a", "b", "c", "<eos>"])],
    )
    bus.probe.emit(snapshot)
    heatmap = panel.heatmap
    np.testing.assert_array_equal(heatmap.image.image, weights[0].astype(np.float32))
    left = [label for _, label in heatmap.plot.getAxis("left")._tickLevels[0]]
    top = [label for _, label in heatmap.plot.getAxis("top")._tickLevels[0]]
    assert left == ["x", "y", "<eos>"] and top == ["a", "b", "c", "<eos>"]
    # row 1 ('y') attends most to column 2 ('c'): the cell under the centre of (row 1, col 2)
    centre = heatmap.image.mapToScene(QPointF(2.5, 1.5))
    assert heatmap.cell_at(centre) == (1, 2)
    heatmap._on_mouse_moved(centre)  # what hovering the cell does
    assert "'y' → 'c'" in heatmap.toolTip() and "weight = 0.8" in heatmap.toolTip()
    # row 0 is drawn above row 2 (queries read top to bottom)
    assert heatmap.image.mapToScene(QPointF(0.5, 0.5)).y() < heatmap.image.mapToScene(QPointF(0.5, 2.5)).y()
    assert "step 7" in panel.status.text()


def test_gpt_masked_self_attention_rows_sum_to_one_and_upper_triangle_is_zero(qtbot):
    bus, panel = make_panel(qtbot)
    workspace = char_workspace("gpt")
    load(qtbot, bus, panel, workspace)
    assert panel.kind_box.currentData() == "decoder"
    assert [panel.head_box.itemData(i) for i in range(panel.head_box.count())] == [MEAN_OF_HEADS, 0, 1]
    for layer in (0, 1):
        for head in (MEAN_OF_HEADS, 0, 1):
            panel.select("decoder", layer, head)
            matrix = panel.heatmap.image.image
            np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-5)
            assert np.abs(np.triu(matrix, k=1)).max() < 1e-7
    source = workspace.data.val[0][0]
    assert panel.source_edit.text() == source
    assert panel.heatmap.row_labels == list(source[:-1])  # an LM predicts token t+1 from tokens ≤ t


def test_transformer_kinds_and_cross_attention_labels(qtbot):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("transformer"))
    kinds = [panel.kind_box.itemData(i) for i in range(panel.kind_box.count())]
    assert kinds == ["encoder", "decoder", "cross"]
    panel.select("cross", 1, 0)
    source, target = panel.probe_input()
    assert panel.heatmap.col_labels == list(source) + ["<eos>"]
    assert panel.heatmap.row_labels == list(target) + ["<eos>"]
    np.testing.assert_allclose(panel.heatmap.image.image.sum(axis=1), 1.0, atol=1e-5)


def test_model_view_grid_and_click_to_open_large(qtbot):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("gpt"))
    panel.model_view_box.setChecked(True)
    assert sorted(panel.grid_items) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    expected = panel.maps[("decoder", 1)].weights[1]
    np.testing.assert_allclose(panel.grid_items[(1, 1)][1].image, expected)
    panel.open_large(1, 1)
    assert not panel.model_view_box.isChecked()
    np.testing.assert_allclose(panel.heatmap.image.image, expected)


def test_rnn_alignment_is_shown_for_seq2seq(qtbot):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("seq2seq", attention="additive"))
    assert "Bahdanau" in panel.kind_box.currentText()
    np.testing.assert_allclose(panel.heatmap.image.image.sum(axis=1), 1.0, atol=1e-5)


def test_live_snapshots_update_the_image_in_place(qtbot):
    bus, panel = make_panel(qtbot)
    workspace = char_workspace("gpt")
    load(qtbot, bus, panel, workspace)
    image_item = panel.heatmap.image
    with torch.no_grad():
        for p in workspace.model.parameters():
            p.mul_(3.0)  # what a few training steps would do: sharper attention
    bus.training_state.emit("running")
    source, target = panel.probe_input()
    snapshot = probe(workspace, source, target, step=42)
    bus.probe.emit(snapshot)
    assert panel.heatmap.image is image_item
    panel.select("decoder", 0, 0)
    np.testing.assert_allclose(panel.heatmap.image.image, snapshot.attention[0].weights[0], rtol=1e-6)
    assert "step 42" in panel.status.text()


def test_editing_the_probe_input_reruns_the_probe(qtbot):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("gpt"))
    panel.source_edit.setText("abcab")
    panel.source_edit.editingFinished.emit()
    qtbot.waitUntil(lambda: panel.heatmap.row_labels == list("abca") and not panel.busy(), timeout=10_000)
    assert panel.probe_input() == ("abcab", panel.target_edit.text())


def test_heatmap_widget_can_be_closed_after_showing_data(qtbot):
    from explorer.ui.heatmap import HeatmapWidget

    heatmap = HeatmapWidget()
    qtbot.addWidget(heatmap)
    heatmap.show()
    heatmap.set_matrix(np.eye(3), ["a", "b", "c"], ["x", "y", "z"])
    heatmap.close()  # pyqtgraph deletes the plot, then resizes: no tick relayout may touch it
    assert heatmap.closed
