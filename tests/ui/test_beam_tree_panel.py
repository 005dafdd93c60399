"""The beam tree panel draws exactly the engine's tree, and a click shows the node's attention."""

import csv
import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPoint, QPointF, Qt

from explorer.analysis.token_pick import pick_token
from explorer.data.tokenizers import WordTokenizer
from explorer.decoding import beam_search, encode_context
from explorer.ui.bus import AppBus
from explorer.ui.panels.beam_tree import STATUS_STYLE, BeamTreePanel
from explorer.workspace import Workspace
from seqmodels.config import BOS_ID, build_model, make_config

# showing a top-level widget on the offscreen platform always logs this; it is not our warning

SENTENCES = ["the cat sat", "a dog ran far", "the dog sat down", "a cat ran"]


def tiny_workspace(family="transformer"):
    src_tok = WordTokenizer.train(SENTENCES)
    tgt_tok = WordTokenizer.train([s.upper() for s in SENTENCES])
    torch.manual_seed(0)
    config = make_config(family, "tiny", vocab_size=tgt_tok.vocab_size,
                         src_vocab_size=src_tok.vocab_size)
    return Workspace(model=build_model(config), tokenizer=tgt_tok, src_tokenizer=src_tok)


@pytest.fixture
def panel(qtbot):
    bus = AppBus()
    panel = BeamTreePanel(bus)
    qtbot.addWidget(panel)
    panel.resize(1100, 600)
    panel.show()
    panel.form.set_values(beam_size=3, max_len=6, alpha=0.0)
    bus.set_workspace(tiny_workspace())  # its probe input is decoded; then this source
    with qtbot.waitSignal(panel.decoded, timeout=10000):
        panel.set_source("the cat sat")
    yield panel
    panel.jobs.shutdown()


def drawn_statuses(panel):
    """node id -> status, read back from the scatter items that draw the nodes."""
    drawn = {}
    for status, scatter in panel.node_items.items():
        for node_id in scatter.data["data"]:
            assert int(node_id) not in drawn
            drawn[int(node_id)] = status
    return drawn


def test_drawn_tree_has_the_engines_nodes_and_statuses(panel):
    ws = panel.workspace
    reference = beam_search(ws.model, encode_context(ws, "the cat sat"), beam_size=3, alpha=0.0,
                            max_len=6, nbest=3, tokenizer=ws.tokenizer)
    assert len(panel.result.nodes) == len(reference.nodes) > 10
    drawn = drawn_statuses(panel)
    assert len(drawn) == len(reference.nodes)
    for node in reference.nodes:
        expected = "root" if node.parent is None else node.status
        assert drawn[node.id] == expected
        assert panel.result.nodes[node.id].token_id == node.token_id
    assert {"kept", "pruned"} <= set(drawn.values())
    # Each status has its own colour, so the statuses are visible, not just recorded.
    for status, scatter in panel.node_items.items():
        assert scatter.opts["brush"].color().name() == STATUS_STYLE[status][0]
    # One edge per non-root node, split across the status edge items.
    edges = sum(len(item.xData) for item in panel.edge_items.values()) // 2
    assert edges == len(reference.nodes) - 1
    # Hiding pruned nodes draws only the others.
    panel.pruned_box.setChecked(False)
    assert "pruned" not in drawn_statuses(panel).values()
    assert len(drawn_statuses(panel)) == sum(n.status != "pruned" for n in reference.nodes)


def test_nbest_and_greedy_paths_follow_the_tree(panel):
    result = panel.result
    for hyp, path in zip(result.nbest, panel.tree.nbest_nodes):
        assert [result.nodes[i].token_id for i in path] == hyp.token_ids
        assert result.nodes[path[-1]].score == pytest.approx(hyp.score)
    greedy_tokens = [result.nodes[i].token_id for i in panel.tree.greedy_nodes]
    assert greedy_tokens == result.greedy.token_ids[: len(greedy_tokens)]
    assert len(greedy_tokens) >= 1  # the most probable first token is always kept
    header, rows = panel.tables()["nodes"]
    assert len(rows) == len(result.nodes)
    nbest_column = header.index("nbest")
    assert sorted(r[nbest_column] for r in rows if r[nbest_column] != "") == list(
        range(1, len(result.nbest) + 1))


def test_click_shows_the_attention_row_that_produced_the_node(panel, qtbot):
    result = panel.result
    node = next(n for n in result.nodes if n.step == 2 and n.status == "kept")
    # Zoom onto the node so the click lands on it alone.
    x, y = panel._xy(node.id)
    panel.plot.getPlotItem().setRange(xRange=(x - 1, x + 1), yRange=(y - 1, y + 1), padding=0)
    view = panel.plot.getViewBox()
    scene_point = view.mapViewToScene(QPointF(x, y))
    widget_point = panel.plot.mapFromScene(scene_point)
    with qtbot.waitSignal(panel.node_selected, timeout=3000) as blocker:
        qtbot.mouseClick(panel.plot.viewport(), Qt.LeftButton, pos=QPoint(widget_point.x(), widget_point.y()))
    assert blocker.args == [node.id]

    # Independent reference: teacher-force the node's prefix through forward(trace=True).
    ws = panel.workspace
    prefix = [n.token_id for n in result.path(node.id)]
    src = torch.tensor([encode_context(ws, "the cat sat")])
    tgt_in = torch.tensor([[BOS_ID] + prefix[:-1]])
    ws.model.eval()
    with torch.no_grad():
        _, trace = ws.model(src, tgt_in, trace=True)
    cross = trace.attention_of("cross")
    last_layer = cross[-1].weights[0, :, node.step].numpy()  # (H, Tk)
    np.testing.assert_allclose(panel.detail.attention_chart.values, last_layer.mean(axis=0), atol=1e-5)
    panel.detail.picker.select(0, 2)  # first layer, third head
    np.testing.assert_allclose(panel.detail.attention_chart.values,
                               cross[0].weights[0, 2, node.step].numpy(), atol=1e-5)
    assert panel.detail.attention_chart.labels == result.source_tokens
    # The candidates chart: this node among its siblings, as probabilities.
    siblings = [n for n in result.nodes if n.parent == node.parent]
    assert len(panel.detail.candidate_chart.values) == len(siblings)
    assert np.exp(node.logprob) in panel.detail.candidate_chart.values
    assert "rank at this step" in panel.detail.info.text()


def test_changing_a_control_redecodes_and_export_writes_json(panel, qtbot, tmp_path):
    with qtbot.waitSignal(panel.decoded, timeout=10000):
        panel.form.boxes["beam_size"].setValue(5)
    assert panel.result.beam_size == 5
    # SVG goes through the same shared exporter (explorer/ui/export.py), tested there.
    written = panel.export(tmp_path / "unselected", formats=("png",))
    assert "beam_node_detail.png" not in {p.name for p in written}  # no figure of an empty detail
    panel.select_node(1)
    written = panel.export(tmp_path, formats=("png", "csv"))
    names = {p.name for p in written}
    assert {"beam_tree.png", "beam_node_detail.png", "beam_nodes.csv", "beam_tree.json"} <= names
    tree = json.loads((tmp_path / "beam_tree.json").read_text())
    assert len(tree["tree"]["nodes"]) == len(panel.result.nodes)
    assert tree["tree"]["nodes"][1]["score"] == pytest.approx(panel.result.nodes[1].score)
    assert panel.has_content()
    # the CSV's step is the number the bottom axis writes under the node (the root, <bos>, is 0)
    with open(tmp_path / "beam_nodes.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    axis = panel.plot.getPlotItem().getAxis("bottom")
    assert rows[0]["parent"] == "" and rows[0]["step"] == "0"
    assert axis.tickStrings([float(rows[0]["x"])], 1.0, 1.0) == ["<bos>"]
    drawn = [row for row in rows[1:] if row["x"] != ""]
    assert drawn and [row["step"] for row in drawn] == axis.tickStrings(
        [float(row["x"]) for row in drawn], 1.0, 1.0)


def label_rects(panel):
    """Scene rectangles of every drawn text: token labels, n-best numbers, greedy markers."""
    items = [t for t in panel.labels.items + panel.markers.items if t.isVisible()]
    return [t.mapRectToScene(t.boundingRect()) for t in items]


def test_default_dock_size_draws_labels_that_never_overlap_or_clip(panel, qtbot):
    panel.resize(830, 420)  # the dock's size in the default main window
    view = panel.plot.getViewBox()
    qtbot.waitUntil(lambda: view.width() < 820, timeout=3000)
    panel.fit()
    view.updateMatrix()  # the labels' scene positions, before the next paint
    rects = label_rects(panel)
    assert panel.labels_shown >= 3 and len(rects) > panel.labels_shown  # labels and n-best numbers
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            overlap = a.intersected(b)
            assert overlap.width() < 1 or overlap.height() < 1, (a, b)
    # Fit keeps every label inside the plot area, and the legend sits outside the tree.
    area = view.sceneBoundingRect().adjusted(-1, -1, 1, 1)
    for rect in rects:
        assert area.contains(rect), (rect, area)
    legend = panel.legend.sceneBoundingRect()
    assert legend.height() > 0 and not legend.intersects(view.sceneBoundingRect())
    assert {label.text for _, label in panel.legend.items} >= {"kept in the beam", "pruned"}


def test_pruned_leaves_have_rows_of_their_own_and_labels_only_zoomed_in(panel, qtbot):
    panel.resize(830, 420)
    qtbot.waitUntil(lambda: panel.plot.getViewBox().width() < 820, timeout=3000)
    panel.fit()
    lay, status = panel.layout_, panel.tree.status[panel.visible_ids]
    leaves = np.bincount(lay.edges[:, 0], minlength=len(lay.x)) == 0
    assert len(np.unique(lay.y[leaves])) == leaves.sum()  # no two leaves share a row
    labelled = {int(panel.visible_ids[np.argmin(np.hypot(lay.x - t.pos().x(), lay.y - t.pos().y()))])
                for t in panel.labels.items if t.isVisible()}
    assert all(panel.tree.status[i] != "pruned" for i in labelled)
    # Zoomed onto a pruned node, it gets its label.
    pruned = np.flatnonzero(status == "pruned")[0]
    x, y = lay.x[pruned], lay.y[pruned]
    panel.plot.getPlotItem().setRange(xRange=(x - 0.5, x + 1.5), yRange=(y - 1, y + 1), padding=0)
    qtbot.waitUntil(lambda: any(t.isVisible() and t.pos().x() == pytest.approx(x + 0.06)
                                and t.pos().y() == pytest.approx(y) for t in panel.labels.items),
                    timeout=3000)


def test_fit_shows_the_whole_tree_after_zooming(panel, qtbot):
    view = panel.plot.getViewBox()
    view.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
    panel.fit()
    (x0, x1), (y0, y1) = view.viewRange()
    lay = panel.layout_
    assert x0 < lay.x.min() and x1 > lay.x.max() and y0 < lay.y.min() and y1 > lay.y.max()
    # A fitted tree stays fitted when the dock is resized.
    panel.resize(700, 360)
    qtbot.waitUntil(lambda: view.viewRange()[1] != [y0, y1], timeout=3000)
    (_, _), (y0, y1) = view.viewRange()
    assert y0 < lay.y.min() and y1 > lay.y.max()


def test_node_detail_opens_on_click_and_is_fully_visible(panel, qtbot):
    panel.resize(830, 420)
    assert not panel.detail_open()  # the tree takes the whole width until a node is clicked
    node = next(n for n in panel.result.nodes if n.status == "kept" and n.step == 1)
    with qtbot.waitSignal(panel.node_selected, timeout=3000):
        panel.select_node(node.id)
    qtbot.waitUntil(lambda: panel.detail.width() >= panel.detail.minimumWidth(), timeout=3000)
    assert panel.detail_open() and panel.details_button.isChecked()
    detail = panel.detail.geometry().translated(panel.splitter.pos())
    assert panel.rect().contains(detail)
    for chart in (panel.detail.attention_chart, panel.detail.candidate_chart):
        title = chart.plot.titleLabel
        assert title.item.boundingRect().width() <= chart.plot.width()
        assert chart.rows_that_fit() >= len(panel.result.source_tokens)  # every source token
    panel.details_button.click()  # collapses again
    assert not panel.detail_open()


def test_a_long_tree_keeps_its_labels_and_numbers_inside_and_the_greedy_path_on_top(panel, qtbot):
    """At max length 30 the steps are narrow: the labels of the last step and the n-best numbers
    right of it stayed clipped at the right edge; finished nodes no longer pile up "<eos>" labels;
    the greedy path is drawn over the edges and the n-best paths."""
    with qtbot.waitSignal(panel.decoded, timeout=10000):
        panel.form.boxes["max_len"].setValue(30)
    assert len(panel.result.greedy.token_ids) > 0
    panel.resize(830, 420)
    view = panel.plot.getViewBox()
    qtbot.waitUntil(lambda: view.width() < 820, timeout=3000)
    panel.fit()
    view.updateMatrix()
    area = view.sceneBoundingRect().adjusted(-1, -1, 1, 1)
    numbers = [t for t in panel.markers.items if t.isVisible() and t.toPlainText().startswith("#")]
    assert numbers
    for text in [t for t in panel.labels.items + panel.markers.items if t.isVisible()]:
        assert area.contains(text.mapRectToScene(text.boundingRect())), text.toPlainText()
    assert not any(t.isVisible() and t.toPlainText().startswith("<eos>") for t in panel.labels.items)
    edges = [panel.edge_items[s].zValue() for s in ("pruned", "kept", "finished")]
    assert panel.greedy_line.zValue() > max(edges + [panel.nbest_line.zValue()])
    assert panel.greedy_line.opacity() == 1.0


def test_why_this_token_explains_the_selected_node_with_its_path_before_it(panel, qtbot):
    result = panel.result
    node = next(n for n in result.nodes if n.step == 2 and n.status == "kept")
    assert not panel.explain_button.isEnabled()
    panel.select_node(node.id)
    with qtbot.waitSignal(panel.bus.token_pick_requested, timeout=3000) as asked:
        panel.explain_button.click()
    ids = [n.token_id for n in result.path(node.id)]
    assert len(ids) == 3 and ids[-1] == node.token_id
    assert asked.args[0] == pick_token(panel.workspace, "the cat sat", ids, "the beam tree")


def test_labels_presented_at_twice_the_size_are_spaced_for_it(panel, qtbot):
    """Presentation mode's ×2 (the panel on a 1920 x 1080 screen with twice the font, its drawn
    text scaled by explorer.ui.presentation_scale): the labels are measured and spaced at the
    size they are drawn, so none overlap; back in the window they are measured as before."""
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from explorer.ui.presentation_scale import Scaling

    panel.form.set_values(beam_size=8, max_len=8)  # a tree with rows closer than a ×2 label (25 px)
    with qtbot.waitSignal(panel.decoded, timeout=10000):
        panel.decode()
    normal_line = panel.line_px
    screen = QWidget()
    qtbot.addWidget(screen)
    QVBoxLayout(screen).addWidget(panel)
    font = QFont(panel.font())
    font.setPointSizeF(2 * font.pointSizeF())
    screen.setFont(font)
    screen.resize(1920, 1080)
    screen.show()
    view = panel.plot.getViewBox()
    qtbot.waitUntil(lambda: view.width() > 1500, timeout=3000)
    scaling = Scaling(screen, 2.0)
    panel.fit()
    qtbot.waitUntil(lambda: scaling.apply() == 0)  # the labels the fit drew are scaled too
    view.updateMatrix()
    drawn = [t for t in panel.labels.items if t.isVisible()]
    assert panel.labels_shown >= 3 and panel.line_px >= 1.8 * normal_line
    assert all(t.textItem.font().pointSizeF() == 2 * panel.labels.font.pointSizeF() for t in drawn)
    rects = label_rects(panel)
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            overlap = a.intersected(b)
            assert overlap.width() < 1 or overlap.height() < 1, (a, b)
    screen.setFont(QFont())
    scaling.undo()
    assert panel.line_px == normal_line
    panel.setParent(None)  # the fixture stops its jobs


def test_labels_of_one_row_keep_a_line_height_apart_at_x1(qtbot):
    """At ×1 the labels keep the spacing presentation mode gives them: between the labels of
    neighbouring steps on one row, at least the height of a line (10 px ran a row's labels
    together into one strip on the dates demo at 1920 x 1080)."""
    from PySide6.QtGui import QFontMetricsF

    from explorer.training.checkpoint import demo_checkpoints, load_checkpoint

    bus = AppBus()
    panel = BeamTreePanel(bus)
    qtbot.addWidget(panel)
    panel.resize(925, 380)
    panel.show()
    panel.form.set_values(beam_size=4, alpha=0.6, max_len=40)
    bus.set_workspace(load_checkpoint(demo_checkpoints()["dates-gru-additive"]))
    with qtbot.waitSignal(panel.decoded, timeout=30_000):
        panel.set_source("08/06/2035")
    gap = QFontMetricsF(panel.labels.font).height()  # the drawn font's own line height
    try:
        for width in (820, 850, 880, 925, 1111):  # steps of ~46 to ~64 px
            panel.resize(width, 380)
            view = panel.plot.getViewBox()
            qtbot.waitUntil(lambda: width / 2 < view.width() < width - 20, timeout=10_000)
            panel.fit()
            view.updateMatrix()
            rects = [t.mapRectToScene(t.boundingRect()) for t in panel.labels.items
                     if t.isVisible()]
            assert len(rects) >= 10, width
            for a in rects:
                for b in rects:
                    same_row = min(a.bottom(), b.bottom()) - max(a.top(), b.top()) > 1
                    if a is not b and same_row and a.left() < b.left():
                        assert b.left() - a.right() >= gap - 1, (width, a, b)
    finally:
        panel.jobs.shutdown()
