"""The hidden/gates and embeddings panels on a 2-layer LSTM, a GRU seq2seq and a Transformer: they
draw the model's own numbers, hover names unit/token/value, the drag selection finds units, and
PNG/SVG/CSV export works."""

import csv

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPointF

from explorer.analysis.embeddings import nearest_neighbours
from explorer.analysis.hidden import hidden_snapshot
from explorer.data.tasks import make_task
from explorer.data.tokenizers import CharTokenizer
from explorer.ui.bus import AppBus
from explorer.ui.panels.embeddings import EmbeddingsPanel, arrow_angle
from explorer.ui.panels.hidden import LENS, NO_UNIT_ON, TRACES_HINT, GatesPanel, HiddenPanel
from explorer.ui.probing import Prober
from explorer.workspace import Workspace
from seqmodels import build_model, make_config

TINY_TRANSFORMER = dict(d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0)


def char_workspace(family, task, **overrides):
    torch.manual_seed(0)
    data = make_task(task, n_train=20, n_val=30, n_test=2)
    tokenizer = CharTokenizer.train([s for pair in data.train + data.val for s in pair])
    sizes = dict(vocab_size=tokenizer.vocab_size)
    if family in ("seq2seq", "transformer"):
        sizes["src_vocab_size"] = tokenizer.vocab_size
    preset = TINY_TRANSFORMER if family in ("transformer", "gpt", "bert") else {}
    model = build_model(make_config(family, "tiny", **{**preset, **sizes, **overrides}))
    return Workspace(model, tokenizer, tokenizer if "src_vocab_size" in sizes else None, task=task, data=data)


def open_panel(qtbot, cls, workspace):
    bus = AppBus()
    panel = cls(bus)
    qtbot.addWidget(panel)
    Prober(bus, panel)  # the controller's part: it probes, the panel draws
    panel.resize(900, 700)
    panel.show()
    bus.set_workspace(workspace)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=30_000)
    return panel


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def hover(heatmap, row, col):
    heatmap._on_mouse_moved(heatmap.image.mapToScene(QPointF(col + 0.5, row + 0.5)))
    return heatmap.hover_text


def test_lstm_hidden_panel_draws_hovers_selects_and_exports(qtbot, tmp_path):
    ws = char_workspace("rnn-lm", "brackets", cell="lstm", num_layers=2)
    panel = open_panel(qtbot, HiddenPanel, ws)
    snapshot = hidden_snapshot(ws, *[panel.source_edit.text(), ""])
    assert [panel.layer_box.itemText(i) for i in range(panel.layer_box.count())] == ["layer 1", "layer 2"]  # people count layers from 1
    assert [panel.quantity_box.itemData(i) for i in range(panel.quantity_box.count())] == ["h", "c", "i", "f", "g", "o"]
    np.testing.assert_array_equal(panel.heatmap.image.image, snapshot.layers[0].hidden)
    text = hover(panel.heatmap, 3, 2)
    assert "unit l1:3" in text and repr(snapshot.layers[0].tokens[2]) in text
    assert f"{snapshot.layers[0].hidden[3, 2]:.6g}" in text

    panel.quantity_box.setCurrentIndex(panel.quantity_box.findData("f"))
    np.testing.assert_array_equal(panel.heatmap.image.image, snapshot.layers[0].gates["f"])

    # the brackets task opens the list on the depth units, read over the validation data
    qtbot.waitUntil(lambda: bool(panel.depth) and not panel.busy(), timeout=30_000)
    assert panel.side_list.item(0).text().startswith("units tracking bracket depth")

    panel.quantity_box.setCurrentIndex(panel.quantity_box.findData("h"))
    # before a selection the traces say how to make one, with no empty plot (nor its export)
    assert panel.traces_view.empty and panel.traces_view.message == TRACES_HINT
    assert "traces" not in panel.plot_items()
    panel.threshold.setValue(-100)  # every unit is above -1 on any span: all are on, none off around
    panel.select_span(1, 4)
    assert panel.traces_view.empty and panel.traces_view.message == NO_UNIT_ON  # none off around
    assert panel.heatmap.span() == (1, 4)
    offered = []  # what the Ablation panel's "From Hidden" takes
    panel.bus.units_selected.connect(offered.append)
    panel.threshold.setValue(0)
    selection = panel.selection
    h = snapshot.layers[0].hidden
    expected = [u for u in range(h.shape[0]) if h[u, 1:4].min() > 0 and max(h[u, 0], h[u, 4]) <= 0]
    assert sorted(selection.units.tolist()) == expected
    assert offered[-1] == (("lm.rnn.l0.fwd.hook_h", selection.units.tolist()) if expected else None)
    assert panel.traces_view.empty == (not expected)
    if expected:
        assert "traces" in panel.plot_items()
        qtbot.waitUntil(lambda: panel.matches is not None and not panel.busy(), timeout=30_000)
        assert panel.side_list.item(0).text().endswith("validation tokens:")

    files = panel.export(tmp_path, ("png", "svg", "csv"))
    names = sorted(p.name for p in files)
    assert {"hidden_heatmap.png", "hidden_heatmap.svg", "hidden_h.csv", "hidden_c.csv", "hidden_gate_f.csv"} <= set(names)
    gate_rows = read_csv(tmp_path / "hidden_gate_f.csv")
    np.testing.assert_array_equal(np.array([[float(v) for v in r[1:]] for r in gate_rows[1:]], dtype=np.float32),
                                  np.concatenate([l.gates["f"] for l in snapshot.layers]))
    rows = read_csv(tmp_path / "hidden_h.csv")
    assert rows[0] == ["unit", *snapshot.layers[0].tokens]
    assert [r[0] for r in rows[1:]] == [f"l{k}:{u}" for k in (1, 2) for u in range(64)]
    exported = np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float32)
    np.testing.assert_array_equal(exported, np.concatenate([l.hidden for l in snapshot.layers]))


def test_gates_panel_on_a_gru_seq2seq(qtbot, tmp_path):
    ws = char_workspace("seq2seq", "reverse", cell="gru", attention="additive")
    panel = open_panel(qtbot, GatesPanel, ws)
    snapshot = panel.snapshot
    assert [l.name for l in snapshot.layers] == ["encoder.l0", "encoder.l0_reverse", "decoder.l0"]
    assert [panel.quantity_box.itemData(i) for i in range(panel.quantity_box.count())] == ["r", "z", "n"]
    panel.layer_box.setCurrentIndex(panel.layer_box.findData("encoder.l0_reverse"))
    panel.quantity_box.setCurrentIndex(panel.quantity_box.findData("z"))
    np.testing.assert_array_equal(panel.heatmap.image.image, snapshot.layers[1].gates["z"])
    assert "unit l1_reverse:1" in hover(panel.heatmap, 1, 0)
    files = {p.name for p in panel.export(tmp_path, ("png", "csv"))}
    assert {"gates_heatmap.png", "gates_r_encoder.csv", "gates_z_decoder.csv"} <= files
    rows = read_csv(tmp_path / "gates_z_encoder.csv")
    assert rows[0][1:] == snapshot.layers[0].tokens and rows[1 + 64][0] == "l1_reverse:0"


@pytest.mark.parametrize("family,task", [("gpt", "brackets"), ("transformer", "reverse")])
def test_transformer_hidden_panel_residual_blocks_and_logit_lens(qtbot, tmp_path, family, task):
    ws = char_workspace(family, task)
    panel = open_panel(qtbot, HiddenPanel, ws)
    stack = panel.snapshot.stacks[-1]
    titles = [panel.layer_box.itemText(i) for i in range(panel.layer_box.count())]
    assert "decoder: residual-stream norm" in titles and titles[-1] == "logit lens"
    panel.layer_box.setCurrentIndex(panel.layer_box.findText("decoder: residual-stream norm"))
    np.testing.assert_array_equal(panel.heatmap.image.image, stack.residual_norm)
    # row 1: the residual stream after the first block; hover names layer, position, token, norm
    assert hover(panel.heatmap, 1, 2) == (f"layer 1, position 2, token {stack.tokens[2]!r}\n"
                                          f"norm = {stack.residual_norm[1, 2]:.6g}")
    assert hover(panel.heatmap, 0, 0).startswith(f"embedding, position 0, token {stack.tokens[0]!r}")
    assert "unit" not in hover(panel.heatmap, 2, 1)
    panel.layer_box.setCurrentIndex(panel.layer_box.findText("decoder: layer 2 output"))
    np.testing.assert_array_equal(panel.heatmap.image.image, stack.block_outputs[1])
    assert hover(panel.heatmap, 5, 1) == (f"decoder layer 2 output, dimension 5, position 1, token "
                                          f"{stack.tokens[1]!r}\nvalue = {stack.block_outputs[1][5, 1]:.6g}")
    panel.layer_box.setCurrentIndex(panel.layer_box.findData(LENS))
    lens = panel.snapshot.lens
    assert panel.stack.currentWidget() is panel.lens_table
    top = panel.lens_table.item(0, 0).text().split("\n")  # the top row is the last layer
    assert top == [lens.top_tokens[-1][0], f"{lens.top_probs[-1, 0]:.2f}"]
    files = {p.name for p in panel.export(tmp_path, ("svg", "csv"))}
    assert {"hidden_lens_top_token.csv", "hidden_heatmap.svg"} <= files
    rows = read_csv(tmp_path / "hidden_lens_top_prob.csv")
    assert rows[0] == ["layer", *lens.tokens] and rows[-1][0] == lens.layer_labels[-1]


def test_embeddings_panel_projects_selects_neighbours_and_analogies(qtbot, tmp_path):
    ws = char_workspace("transformer", "dates")
    panel = open_panel(qtbot, EmbeddingsPanel, ws)
    data = panel.data
    assert [panel.which_box.itemData(i) for i in range(panel.which_box.count())] == ["input", "output", "source"]
    shown = panel.points.data["data"].astype(int)  # every token of a small vocabulary is drawn
    assert sorted(shown) == list(range(len(data.tokens)))
    np.testing.assert_array_equal(panel.points.getData()[0], data.projection.coords[shown, 0])
    assert panel.set_box.findData("digits") >= 0
    panel.set_box.setCurrentIndex(panel.set_box.findData("digits"))
    assert len(panel.highlight.getData()[0]) == len(data.sets["digits"])

    index = data.token_id("3")
    panel.search.setText("3")
    panel.search.returnPressed.emit()
    assert panel.neighbours == nearest_neighbours(data.matrix, index, 10)
    assert panel.results.item(1).text().startswith(data.tokens[panel.neighbours[0][0]])
    assert len(panel.labelled_ids()) <= 150 and index in panel.labelled_ids()

    panel.a_edit.setText("2"), panel.b_edit.setText("1"), panel.c_edit.setText("5")
    panel.solve_button.click()
    assert panel.answers[0][0] not in {data.token_id(t) for t in "215"}
    assert len(panel.arrows) == 4  # two lines, two heads
    files = {p.name for p in panel.export(tmp_path, ("png", "svg", "csv"))}
    assert {"embeddings_projection.png", "embeddings_projection.svg", "embeddings_projection.csv",
            "embeddings_analogy.csv"} <= files
    rows = read_csv(tmp_path / "embeddings_projection.csv")
    assert rows[0] == ["id", "token", "pc1", "pc2"] and len(rows) == 1 + len(data.tokens)

    panel.solve_button.setEnabled(True)
    panel.a_edit.setText("notatoken")
    panel.solve_button.click()
    assert "not in the vocabulary: notatoken" in panel.status.text()


def test_arrow_angle_points_along_the_vector():
    assert arrow_angle(1, 0) == pytest.approx(180)  # right
    assert arrow_angle(-1, 0) == pytest.approx(0)  # left: pyqtgraph's default
    assert arrow_angle(0, 1) == pytest.approx(90)  # up: Qt turns clockwise on a y-down screen


class FakeDrag:
    """The parts of pyqtgraph's MouseDragEvent the heatmap's drag reads."""

    def __init__(self, scene_pos, start=False, finish=False):
        from PySide6.QtCore import Qt

        self._pos, self._start, self._finish, self._button = scene_pos, start, finish, Qt.MouseButton.LeftButton

    def button(self):
        return self._button

    def accept(self):
        pass

    def scenePos(self):
        return self._pos

    def isStart(self):
        return self._start

    def isFinish(self):
        return self._finish


def test_dragging_across_tokens_selects_a_span_snapped_to_tokens(qtbot):
    ws = char_workspace("rnn-lm", "copy", cell="gru")
    panel = open_panel(qtbot, HiddenPanel, ws)
    heatmap = panel.heatmap
    at = lambda x: heatmap.plot.getViewBox().mapViewToScene(QPointF(x, 2.0))  # noqa: E731
    heatmap._drag(FakeDrag(at(1.2), start=True))
    heatmap._drag(FakeDrag(at(2.6)))
    heatmap._drag(FakeDrag(at(3.1), finish=True))
    assert heatmap.span() == (1, 4)
    assert panel.selection is not None and (panel.selection.start, panel.selection.end) == (1, 4)
    heatmap.region.setRegion((-0.4, 1.6))  # edges dragged near -0.5 and 1.5: tokens 0 and 1
    heatmap.region.sigRegionChangeFinished.emit(heatmap.region)
    assert heatmap.span() == (0, 2) and (panel.selection.start, panel.selection.end) == (0, 2)


def test_live_probe_snapshots_from_training_update_the_hidden_panel(qtbot):
    from explorer.analysis.probe import probe

    ws = char_workspace("rnn-lm", "copy", cell="lstm")
    panel = open_panel(qtbot, HiddenPanel, ws)
    panel.bus.state.set_training("running")
    with torch.no_grad():
        for p in ws.model.parameters():
            p.add_(0.5)  # a training step moved the weights
    live = probe(ws, "abcab", step=7)  # what the trainer's probe_fn emits
    panel.bus.probe.emit(live)
    assert panel.snapshot is live.hidden and panel.snapshot.step == 7
    np.testing.assert_array_equal(panel.heatmap.image.image, live.hidden.layers[0].hidden)
    np.testing.assert_allclose(live.hidden.layers[0].hidden, hidden_snapshot(ws, "abcab").layers[0].hidden, atol=1e-6)
    assert "'abcab'" in panel.status.text()  # the input itself is the Prober's (bus.probe_input_changed)


def test_a_selection_on_a_transformer_block_finds_its_matches_in_the_validation_data(qtbot):
    from explorer.analysis.selection import find_matches

    ws = char_workspace("gpt", "brackets")
    panel = open_panel(qtbot, HiddenPanel, ws)
    panel.layer_box.setCurrentIndex(panel.layer_box.findText("decoder: layer 1 output"))
    panel.threshold.setValue(0)
    panel.select_span(1, 3)
    units = panel.selection.units
    assert len(units) >= 1  # this seed's model has one (dimension 8)
    qtbot.waitUntil(lambda: panel.matches is not None and not panel.busy(), timeout=30_000)
    stream = panel.streams["decoder.layer0"]  # the block's own trace name
    expected = find_matches(stream, units, 0.0, query_length=2)
    assert panel.matches.starts.tolist() == expected.starts.tolist()
    assert panel.side_list.item(0).text() == f"{len(expected)} match(es) in {stream.length:,} validation tokens:"
