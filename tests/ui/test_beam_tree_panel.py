"""The beam tree panel draws exactly the engine's tree, and a click shows the node's attention."""

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPoint, QPointF, Qt

from explorer.data.tokenizers import WordTokenizer
from explorer.decoding import beam_search, encode_context
from explorer.ui.bus import AppBus
from explorer.ui.panels.beam_tree import STATUS_STYLE, BeamTreePanel
from explorer.workspace import Workspace
from models.config import BOS_ID, build_model, make_config

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
    panel.source_box.setText("the cat sat")
    panel.width_box.setValue(3)
    panel.max_len_box.setValue(6)
    panel.alpha_box.setValue(0.0)
    with qtbot.waitSignal(panel.decoded, timeout=10000):
        bus.set_workspace(tiny_workspace())
    yield panel
    panel.worker.stop()


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
    for hyp, path in zip(result.nbest, panel.nbest_nodes):
        assert [result.nodes[i].token_id for i in path] == hyp.token_ids
        assert result.nodes[path[-1]].score == pytest.approx(hyp.score)
    greedy_tokens = [result.nodes[i].token_id for i in panel.greedy_nodes]
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
        panel.width_box.setValue(5)
    assert panel.result.beam_size == 5
    # SVG goes through the same shared exporter (explorer/ui/export.py), tested there.
    written = panel.export(tmp_path, formats=("png", "csv"))
    names = {p.name for p in written}
    assert {"beam_tree.png", "beam_node_detail.png", "beam_nodes.csv", "beam_tree.json"} <= names
    tree = json.loads((tmp_path / "beam_tree.json").read_text())
    assert len(tree["tree"]["nodes"]) == len(panel.result.nodes)
    assert tree["tree"]["nodes"][1]["score"] == pytest.approx(panel.result.nodes[1].score)
    assert panel.has_content()
