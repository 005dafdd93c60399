"""The attention panel: orientation (rows are queries), labels, hover, every architecture, live update."""

import numpy as np
import torch
from PySide6.QtCore import QPointF, Qt

from explorer.analysis.probe import probe
from explorer.data.tasks import make_task
from explorer.data.tokenizers import CharTokenizer
from explorer.events import AttentionSnapshot, ProbeSnapshot
from explorer.ui.bus import AppBus
from explorer.ui.panels.attention import MEAN_OF_HEADS, AttentionPanel
from explorer.ui.plot_style import drawn_labels
from explorer.ui.probing import Prober
from explorer.workspace import Workspace
from seqmodels import build_model, make_config


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
    Prober(bus, panel)  # the controller's part: it probes, the panel draws
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
    qtbot.waitUntil(lambda: drawn_labels(heatmap.plot.getAxis("left")) == ["x", "y", "<eos>"])
    assert drawn_labels(heatmap.plot.getAxis("top")) == ["a", "b", "c", "<eos>"]
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
    assert panel.heatmap.row_labels == list(source)  # every token typed, the last one too


def test_transformer_kinds_and_cross_attention_labels(qtbot):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("transformer"))
    kinds = [panel.kind_box.itemData(i) for i in range(panel.kind_box.count())]
    assert kinds == ["encoder", "decoder", "cross"]
    assert panel.kind_box.currentData() == "cross"  # a new model opens on its alignment
    panel.select("encoder", 0, 0)
    panel.show_snapshot(panel.snapshot)
    assert panel.kind_box.currentData() == "encoder"  # the same model's next snapshot keeps the choice
    panel.select("cross", 1, 0)
    source, target = panel.probe_input()
    assert panel.heatmap.col_labels == list(source) + ["<eos>"]
    assert panel.heatmap.row_labels == list(target) + ["<eos>"]
    np.testing.assert_allclose(panel.heatmap.image.image.sum(axis=1), 1.0, atol=1e-5)


def test_model_view_grid_and_click_to_open_large(qtbot):
    bus, panel = make_panel(qtbot)
    load(qtbot, bus, panel, char_workspace("gpt"))
    panel.model_view_box.setChecked(True)
    assert sorted(panel.grid.tiles()) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    expected = panel.maps[("decoder", 1)].weights[1]
    np.testing.assert_allclose(panel.grid.tiles()[(1, 1)], expected, rtol=1e-6)
    panel.open_large(1, 1)
    assert not panel.model_view_box.isChecked()
    np.testing.assert_allclose(panel.heatmap.image.image, expected)


def brute_force_block_mean(matrix, block_rows, block_cols):
    """Each cell the plain mean of its block, loops only (the reference for the mosaic's tiles)."""
    rows = []
    for r0 in range(0, matrix.shape[0], block_rows):
        row = []
        for c0 in range(0, matrix.shape[1], block_cols):
            block = matrix[r0:r0 + block_rows, c0:c0 + block_cols]
            row.append(sum(float(v) for v in block.ravel()) / block.size)
        rows.append(row)
    return np.array(rows)


def many_heads_snapshot(layers=3, heads=4, queries=150, keys=130):
    rng = np.random.default_rng(1)
    maps = []
    for layer in range(layers):
        weights = rng.random((heads, queries, keys)).astype(np.float32)
        weights /= weights.sum(axis=-1, keepdims=True)
        maps.append(AttentionSnapshot("cross", layer, weights, [f"q{i}" for i in range(queries)],
                                      [f"k{i}" for i in range(keys)]))
    return ProbeSnapshot(step=3, source="s", target="t", attention=maps)


def test_model_view_is_one_block_averaged_mosaic_with_hover_and_click(qtbot):
    """150 queries x 130 keys: tiles of at most 64 x 64, blocks of ceil(150/64) = 3 queries and
    ceil(130/64) = 3 keys (the last ones shorter), one ImageItem for all 12 heads, 1-pixel gaps."""
    bus, panel = make_panel(qtbot)
    snapshot = many_heads_snapshot()
    bus.probe.emit(snapshot)
    panel.model_view_box.setChecked(True)
    grid = panel.grid
    assert sorted(grid.tiles()) == [(l, h) for l in range(3) for h in range(4)]
    for (layer, head), tile in grid.tiles().items():
        assert tile.shape == (50, 44)
        expected = brute_force_block_mean(snapshot.attention[layer].weights[head], 3, 3)
        np.testing.assert_allclose(tile, expected, rtol=1e-5)
    # one image, the tiles and NaN gaps between them: 3 x 50 + 2 rows, 4 x 44 + 3 columns
    assert grid.mosaic.image.shape == (152, 179)
    assert np.isnan(grid.mosaic.image[50]).all() and np.isnan(grid.mosaic.image[:, 44]).all()
    assert not np.isnan(grid.mosaic.image[51:101, 45:89]).any()
    assert [item for item in grid.plot.items if hasattr(item, "setImage")] == [grid.image]
    # the layer and head labels on the axes, counted from 1 as everywhere in the app
    qtbot.waitUntil(lambda: drawn_labels(grid.plot.getAxis("left")) == ["layer 1", "layer 2", "layer 3"])
    assert drawn_labels(grid.plot.getAxis("top")) == ["head 1", "head 2", "head 3", "head 4"]
    # hover on layer 2 (index 1), head 3 (index 2), tile pixel (row 10, col 43): queries 30-32,
    # keys 129 only (the last, shorter block)
    x, y, _, _ = grid.tile_rect(1, 2)
    grid._on_mouse_moved(grid.image.mapToScene(QPointF(x + 43.5, y + 10.5)))
    mean = snapshot.attention[1].weights[2, 30:33, 129:130].mean()
    assert "layer 2 · head 3" in grid.toolTip()
    assert "queries 30–32" in grid.toolTip() and "keys 129–129" in grid.toolTip()
    assert f"mean weight = {mean:.6g}" in grid.toolTip()
    grid._on_mouse_moved(grid.image.mapToScene(QPointF(x + 44.5, y + 10.5)))  # on a gap
    assert grid.toolTip() == ""
    # a left click on that tile opens layer 2, head 3 at full size
    centre = grid.image.mapToScene(QPointF(x + 20, y + 20))
    view = grid.mapFromScene(centre)
    qtbot.mouseClick(grid.viewport(), Qt.MouseButton.LeftButton, pos=view)
    qtbot.waitUntil(lambda: not panel.model_view_box.isChecked())
    assert (panel.layer_box.currentData(), panel.head_box.currentData()) == (1, 2)
    np.testing.assert_array_equal(panel.heatmap.image.image, snapshot.attention[1].weights[2])


def test_small_maps_hover_the_exact_weight_and_a_switch_keeps_the_mosaic(qtbot):
    bus, panel = make_panel(qtbot)
    snapshot = many_heads_snapshot(layers=2, heads=2, queries=5, keys=7)
    bus.probe.emit(snapshot)
    panel.model_view_box.setChecked(True)
    grid = panel.grid
    assert not grid.mosaic.downsampled()
    x, y, _, _ = grid.tile_rect(1, 0)
    grid._on_mouse_moved(grid.image.mapToScene(QPointF(x + 6.5, y + 4.5)))
    weight = snapshot.attention[1].weights[0, 4, 6]
    assert grid.toolTip().startswith("layer 2 · head 1\n'q4' → 'k6'")
    assert f"weight = {weight:.6g}" in grid.toolTip()
    mosaic = grid.mosaic
    panel.select("cross", 0, 1)  # the boxes under the model view: nothing to recompute
    assert grid.mosaic is mosaic
    bus.probe.emit(many_heads_snapshot(layers=2, heads=2, queries=5, keys=7))  # a new probe: redrawn
    assert grid.mosaic is not mosaic


def test_model_view_exports_png_svg_and_every_map_as_csv(qtbot, tmp_path):
    bus, panel = make_panel(qtbot)
    snapshot = many_heads_snapshot(layers=2, heads=3, queries=70, keys=9)
    bus.probe.emit(snapshot)
    panel.model_view_box.setChecked(True)
    qtbot.waitUntil(lambda: panel.grid.plot.sceneBoundingRect().width() > 100)
    written = {path.name for path in panel.export(tmp_path)}
    assert {"attention_model_view.png", "attention_model_view.svg", "attention_all_maps.csv"} <= written
    assert (tmp_path / "attention_model_view.png").stat().st_size > 1000
    lines = (tmp_path / "attention_all_maps.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 2 * 3 * 70 * 9
    menu = panel.grid.plot.getViewBox().menu
    assert "Export panel…" in [action.text() for action in menu.actions()]


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
    bus.state.set_training("running")
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
    qtbot.waitUntil(lambda: panel.heatmap.row_labels == list("abcab") and not panel.busy(), timeout=10_000)
    assert panel.probe_input() == ("abcab", panel.target_edit.text())


def test_heatmap_widget_can_be_closed_after_showing_data(qtbot):
    from explorer.ui.heatmap import HeatmapWidget

    heatmap = HeatmapWidget()
    qtbot.addWidget(heatmap)
    heatmap.show()
    heatmap.set_matrix(np.eye(3), ["a", "b", "c"], ["x", "y", "z"])
    heatmap.close()  # pyqtgraph deletes the plot, then resizes: no tick relayout may touch it
    assert heatmap.closed


def token_snapshot(size: int) -> ProbeSnapshot:
    rng = np.random.default_rng(0)
    weights = rng.random((1, size, size))
    weights /= weights.sum(axis=-1, keepdims=True)
    tokens = [f"w{i}" for i in range(size - 1)] + ["<eos>"]
    return ProbeSnapshot(step=1, source=" ".join(tokens), target="",
                         attention=[AttentionSnapshot("encoder", 0, weights, tokens, tokens)])


def test_every_token_is_labelled_on_both_axes_at_the_docks_size(qtbot):
    """11 source tokens in the dock's default size (~830 x 400): no label skipped on either axis."""
    bus, panel = make_panel(qtbot)
    panel.resize(830, 400)
    snapshot = token_snapshot(11)
    bus.probe.emit(snapshot)
    tokens = snapshot.attention[0].cols
    left, top = panel.heatmap.plot.getAxis("left"), panel.heatmap.plot.getAxis("top")
    qtbot.waitUntil(lambda: drawn_labels(left) == tokens and drawn_labels(top) == tokens)
    # a label is drawn no smaller than 8 pt, readable from the back of a lecture hall
    assert left.style["tickFont"].pointSizeF() >= 8 and top.style["tickFont"].pointSizeF() >= 8
    panel.heatmap._on_mouse_moved(panel.heatmap.image.mapToScene(QPointF(3.5, 2.5)))
    weight = snapshot.attention[0].weights[0, 2, 3]
    assert "'w2' → 'w3'" in panel.heatmap.toolTip() and f"weight = {weight:.6g}" in panel.heatmap.toolTip()


def test_256_tokens_are_thinned_evenly_only_after_the_smallest_font(qtbot):
    bus, panel = make_panel(qtbot)
    panel.resize(830, 400)
    bus.probe.emit(token_snapshot(256))
    top = panel.heatmap.plot.getAxis("top")
    qtbot.waitUntil(lambda: top.stride > 1)
    shown = drawn_labels(top)
    assert top.style["tickFont"].pointSizeF() == min(top.font_sizes)
    # every stride-th label; the two at the ends may not fit beside the axis's ends
    evenly_spaced = [f"w{i}" for i in range(0, 255, top.stride)]
    assert set(evenly_spaced[1:-1]) <= set(shown) <= set(evenly_spaced)
    # neighbours never overlap: each label's room fits in the stride's pixels
    pixels_per_label = top.geometry().width() / 256 * top.stride
    assert top.label_room(min(top.font_sizes)) <= pixels_per_label
    # zoomed in on 8 columns, every one of them is labelled again
    panel.heatmap.plot.setXRange(99.5, 107.5, padding=0)
    qtbot.waitUntil(lambda: drawn_labels(top) == [f"w{i}" for i in range(100, 108)])


def test_a_live_heatmap_update_at_256_is_in_place(qtbot):
    """Live updates reuse the one ImageItem and add nothing to the scene (their speed is measured
    by benchmarks/bench_heatmap.py)."""
    bus, panel = make_panel(qtbot)
    snapshot = token_snapshot(256)
    bus.probe.emit(snapshot)
    heatmap, attention = panel.heatmap, snapshot.attention[0]
    image, items = heatmap.image, len(heatmap.scene().items())
    for k in range(20):
        matrix = np.roll(attention.weights[0], k, axis=1)  # (256, 256), each a new map
        heatmap.set_matrix(matrix, attention.rows, attention.cols)
        assert heatmap.image is image
        np.testing.assert_array_equal(image.image, matrix.astype(image.image.dtype))
    assert len(heatmap.scene().items()) == items
