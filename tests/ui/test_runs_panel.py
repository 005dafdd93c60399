"""The Compare runs panel on real run folders written by `explorer train --out` (issue 14): one
curve and legend entry per run, CSV columns equal to what metrics.jsonl records, two runs'
attention side by side equal to each model's own attention, bad folders as one line."""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pytest
import torch
from PySide6.QtCore import QMimeData, QPoint, Qt, QUrl
from PySide6.QtGui import QDropEvent

from explorer.cli import main as explorer_main
from explorer.ui.bus import AppBus
from seqmodels.config import BOS_ID, EOS_ID

RUNS = {  # folder name -> model flags
    "gru": ["--cell", "gru", "--attention", "additive"],
    "lstm": ["--cell", "lstm", "--attention", "additive"],
    "plain": ["--cell", "gru", "--attention", "none"],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name, flags in RUNS.items():
        code = explorer_main(["train", "--task", "reverse", "--arch", "seq2seq", *flags,
                              "--steps", "6", "--eval-every", "3", "--snapshot-every", "3",
                              "--batch-size", "8", "--seed", "1", "--out", str(root / name)])
        assert code == 0
    return root


@pytest.fixture
def panel(qtbot):
    from explorer.ui.panels.runs import RunsPanel

    panel = RunsPanel(AppBus())
    qtbot.addWidget(panel)
    panel.resize(1000, 650)
    panel.show()
    qtbot.waitExposed(panel)
    yield panel
    panel.shutdown()


def recorded(folder, key: str) -> dict[int, float]:
    """step -> value of `key` in metrics.jsonl, read with json alone."""
    values = {}
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get(key) is not None and row.get("event") in (None, "eval"):
            values[row["step"]] = row[key]
    return values


def test_two_runs_overlay_two_curves_with_two_legend_entries(panel, runs):
    assert panel.add_run(runs / "gru") and panel.add_run(runs / "lstm")
    assert panel.legend_names() == ["gru", "lstm"]
    assert panel.current_metric() == "loss"
    colours = set()
    for name in ("gru", "lstm"):
        curve = panel.entries[name].curve
        x, y = curve.getData()
        losses = recorded(runs / name, "loss")
        assert x.tolist() == sorted(losses) and np.allclose(y, [losses[s] for s in sorted(losses)])
        colours.add(curve.opts["pen"].color().name())
    assert len(colours) == 2
    assert panel.has_content()
    # every recorded metric is offered, BLEU and the gradient norm among them
    offered = [panel.metric_box.itemData(i) for i in range(panel.metric_box.count())]
    assert {"loss", "val_loss", "bleu", "grad_norm"} <= set(offered)


def test_csv_has_one_column_per_run_with_the_recorded_values(panel, runs, tmp_path):
    panel.add_run(runs / "gru")
    panel.add_run(runs / "lstm")
    for metric in ("val_loss", "bleu", "loss"):
        panel.set_metric(metric)
        written = panel.export(tmp_path / metric, formats=("png", "svg", "csv"))
        names = {path.name for path in written}
        assert {"runs_curves.png", "runs_curves.svg", f"runs_{metric}.csv"} <= names
        with open(tmp_path / metric / f"runs_{metric}.csv", newline="") as handle:
            rows = list(csv.reader(handle))
        assert rows[0] == ["step", "gru", "lstm"]
        expected = {name: recorded(runs / name, metric) for name in ("gru", "lstm")}
        steps = sorted(set(expected["gru"]) | set(expected["lstm"]))
        assert [int(row[0]) for row in rows[1:]] == steps
        for row in rows[1:]:
            for column, name in ((1, "gru"), (2, "lstm")):
                assert float(row[column]) == pytest.approx(expected[name][int(row[0])], abs=0)


def own_attention(folder, source: str, target: str, step=None) -> np.ndarray:
    """The model's cross-attention on (source, target), mean of heads, computed here directly."""
    from explorer.training.checkpoint import load_checkpoint

    path = folder if step is None else folder / "snapshots" / f"step-{step:06d}"
    workspace = load_checkpoint(path, load_data=False)
    src = workspace.src_tokenizer.encode(source) + [EOS_ID]
    tgt_in = [BOS_ID] + workspace.tokenizer.encode(target)
    model = workspace.model.eval()
    with torch.no_grad():
        trace = model(torch.tensor([src]), torch.tensor([tgt_in]), trace=True)[-1]
    cross = [m for m in trace.attention if m.kind == "cross"][-1]
    return cross.weights[0].mean(0).numpy()  # (H, Tq, Tk) -> (Tq, Tk)


def test_side_by_side_attention_equals_each_models_own(panel, runs, qtbot):
    for name in ("gru", "lstm", "plain"):
        panel.add_run(runs / name)
    side = panel.side_by_side
    side.choose("A", "gru")
    side.choose("B", "lstm", step=3)
    side.source_edit.setText("qwertyu")
    side.target_edit.setText("uytrewq")
    with qtbot.waitSignal(side.compared, timeout=60_000):
        qtbot.mouseClick(side.compare_button, Qt.MouseButton.LeftButton)
    a, b = side.sides["A"], side.sides["B"]
    assert a.view.step == 6 and b.view.step == 3
    np.testing.assert_allclose(a.heatmap.matrix, own_attention(runs / "gru", "qwertyu", "uytrewq"),
                               atol=1e-6)
    np.testing.assert_allclose(b.heatmap.matrix,
                               own_attention(runs / "lstm", "qwertyu", "uytrewq", step=3),
                               atol=1e-6)
    assert a.heatmap.col_labels == list("qwertyu") + ["<eos>"]
    assert "gru" in a.heatmap.title_text and "lstm · step 3" in b.heatmap.title_text
    tables = panel.tables()
    assert np.allclose([row[1:] for row in tables["attention_a"][1]], a.heatmap.matrix)
    # a model without attention says so on its side; the other side still shows its map
    side.choose("B", "plain")
    with qtbot.waitSignal(side.compared, timeout=60_000):
        side.compare()
    assert b.stack.currentWidget() is b.message and "no attention" in b.message.text()
    assert a.stack.currentWidget() is a.heatmap


def test_blank_input_uses_run_as_first_validation_example(panel, runs, qtbot):
    from explorer.analysis.probe_input import default_probe_input
    from explorer.training.checkpoint import load_checkpoint

    panel.add_run(runs / "gru")
    panel.add_run(runs / "lstm")
    with qtbot.waitSignal(panel.side_by_side.compared, timeout=60_000):
        panel.side_by_side.compare()
    source, target = default_probe_input(load_checkpoint(runs / "gru"))
    assert panel.side_by_side.source_edit.text() == source
    assert panel.side_by_side.target_edit.text() == target
    np.testing.assert_allclose(panel.side_by_side.sides["B"].heatmap.matrix,
                               own_attention(runs / "lstm", source, target), atol=1e-6)


def test_bad_folders_are_one_line_and_the_panel_keeps_going(panel, runs, tmp_path):
    panel.add_run(runs / "gru")
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "missing", tmp_path / "file.txt", runs / "gru"):
        assert not panel.add_run(bad)
        assert panel.status.text() and "\n" not in panel.status.text()
        assert "Traceback" not in panel.status.text()
    assert "already compared" in panel.status.text()
    assert panel.legend_names() == ["gru"]
    assert panel.add_run(runs / "lstm") and panel.legend_names() == ["gru", "lstm"]


def test_dropped_folders_are_added_and_removed_runs_leave_the_legend(panel, runs):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(runs / "gru")), QUrl.fromLocalFile(str(runs / "lstm"))])
    event = QDropEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    panel.dropEvent(event)
    assert panel.legend_names() == ["gru", "lstm"]
    panel.run_list.item(0).setSelected(True)
    panel.remove_selected()
    assert panel.legend_names() == ["lstm"] and list(panel.entries) == ["lstm"]


def test_a_run_still_written_grows_on_screen(panel, runs, tmp_path, qtbot):
    live = tmp_path / "live"
    shutil.copytree(runs / "gru", live)
    metrics = live / "metrics.jsonl"
    lines = [line for line in metrics.read_text().splitlines()
             if json.loads(line).get("event") != "finished"]
    metrics.write_text("\n".join(lines) + "\n")
    assert panel.add_run(live)
    assert panel.follow_timer.isActive() and "(live)" in panel.run_list.item(0).text()
    with metrics.open("a") as handle:
        handle.write(json.dumps({"step": 7, "loss": 0.5, "lr": 0.001, "grad_norm": 1.0,
                                 "grad_norm_clipped": 1.0, "tokens": 8, "tokens_per_s": 1.0,
                                 "elapsed_s": 1.0}) + "\n")
    qtbot.waitUntil(lambda: panel.entries["live"].curve.getData()[0][-1] == 7, timeout=10_000)
    assert panel.entries["live"].curve.getData()[1][-1] == 0.5


def test_side_by_side_beam_trees_equal_each_models_own_beam_search(panel, runs, qtbot, tmp_path):
    from explorer.decoding.search import beam_search
    from explorer.training.checkpoint import load_checkpoint

    panel.add_run(runs / "gru")
    panel.add_run(runs / "plain")
    side = panel.side_by_side
    side.set_mode("beam")
    assert not side.target_edit.isEnabled()
    side.source_edit.setText("asdfgh")
    with qtbot.waitSignal(side.compared, timeout=60_000):
        side.compare()
    for key, name in (("A", "gru"), ("B", "plain")):
        workspace = load_checkpoint(runs / name, load_data=False)
        context = workspace.src_tokenizer.encode("asdfgh") + [EOS_ID]
        expected = beam_search(workspace.model, context, beam_size=4, alpha=0.6, max_len=40,
                               nbest=3, tokenizer=workspace.tokenizer)
        shown = side.sides[key].beam.result
        assert side.sides[key].shows() == "beam"
        assert [h.token_ids for h in shown.nbest] == [h.token_ids for h in expected.nbest]
        assert [(n.parent, n.token_id, n.status) for n in shown.nodes] == [
            (n.parent, n.token_id, n.status) for n in expected.nodes]
        x, _ = side.sides[key].beam.nodes["kept"].getData()
        assert len(x) == sum(n.status == "kept" and n.parent is not None for n in expected.nodes)
    written = {path.name for path in panel.export(tmp_path, formats=("png", "csv"))}
    assert {"runs_beam_a.png", "runs_beam_b.png", "runs_beam_a_hypotheses.csv"} <= written


def test_this_windows_training_curve_is_rebuilt_once_for_many_batches(panel, qtbot, monkeypatch):
    """The ~30 step batches a second of a training in this window are coalesced: the curve gets
    every step, and is rebuilt once, not once per batch (each rebuild reads every row)."""
    from explorer.events import StepMetrics
    from explorer.ui.panels import runs as runs_module

    rebuilds = []
    original = runs_module.RunsPanel._update_window_entry
    monkeypatch.setattr(runs_module.RunsPanel, "_update_window_entry",
                        lambda self: (rebuilds.append(1), original(self)))
    panel.window_timer.timeout.disconnect()
    panel.window_timer.timeout.connect(panel._update_window_entry)
    for batch in range(20):
        panel.bus.step_metrics.emit([StepMetrics(step=10 * batch + k + 1, loss=1.0 / (batch + 1), lr=1e-3,
                                                 grad_norm=1.0, grad_norm_clipped=1.0, tokens=8,
                                                 tokens_per_s=1.0, elapsed_s=0.1) for k in range(10)])
    qtbot.waitUntil(lambda: runs_module.THIS_WINDOW in panel.entries, timeout=5_000)
    steps, losses = panel.entries[runs_module.THIS_WINDOW].curve.getData()
    assert steps.tolist() == list(range(1, 201))
    assert losses[-1] == pytest.approx(1.0 / 20)
    assert len(rebuilds) == 1
