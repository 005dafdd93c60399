"""A run folder in the app: opened with its whole history, scrubbed snapshot by snapshot (every
panel shows that snapshot's model, an export exports it), and followed while another process
writes it. References are computed independently: the snapshot checkpoint loaded on its own."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from explorer.cli import main
from explorer.runs import RunReader

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8", "--hidden", "16"]
LOAD_MS = 60_000


def train(run, *args) -> None:
    assert main(["train", "--task", "reverse", "--arch", "seq2seq", "--lr", "0.01", *FAST,
                 *args, "--out", str(run)]) == 0


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory):
    """12 steps of a tiny seq2seq with attention; evaluations and snapshots every 4 steps."""
    run = tmp_path_factory.mktemp("runs") / "reverse"
    train(run, "--steps", "12", "--eval-every", "4", "--snapshot-every", "4")
    return run


@pytest.fixture
def own_run(recorded_run, tmp_path):
    """A copy this test may damage."""
    run = tmp_path / "reverse"
    shutil.copytree(recorded_run, run)
    return run


def opened(make_main_window, qtbot, run):
    window = make_main_window()
    window.open_path(run)
    qtbot.waitUntil(lambda: window.bus.run is not None and bool(window.runs.positions)
                    and not window.controller.jobs.busy, timeout=LOAD_MS)
    return window


def scrub_to(window, qtbot, step: int) -> None:
    """Drag the slider to `step`'s snapshot and wait until the panels have probed it."""
    steps = window.runs.timeline.steps
    window.runs.timeline.slider.setValue(steps.index(step))  # as a drag does
    settled(window, qtbot, step)


def settled(window, qtbot, step: int) -> None:
    attention = window.panels["attention"]
    qtbot.waitUntil(lambda: window.controller.workspace.step == step
                    and attention.snapshot is not None and attention.snapshot.step == step
                    and not window.bus.probing and not window.controller.jobs.busy,
                    timeout=LOAD_MS)


def independent_probe(run, step, source, target):
    from explorer.analysis.probe import probe
    from explorer.runs import snapshot_dir
    from explorer.training.checkpoint import load_checkpoint

    return probe(load_checkpoint(snapshot_dir(run, step)), source, target, step)


def test_opening_a_run_shows_its_whole_recorded_history_and_snapshots(make_main_window, qtbot,
                                                                      recorded_run):
    window = opened(make_main_window, qtbot, recorded_run)
    reader = RunReader(recorded_run)
    reader.read_new()
    recorded = reader.curves()
    curves = window.panels["curves"]
    train = curves.train.view()
    assert train[:, 0].tolist() == recorded.train["step"].tolist() == list(range(1, 13))
    np.testing.assert_allclose(train[:, 1], recorded.train["loss"])
    np.testing.assert_allclose(curves.evals.view()[:, 1], recorded.eval["val_loss"])
    assert curves.evals.view()[:, 0].tolist() == [4, 8, 12]
    dock = window.findChild(QDockWidget, "timeline")
    assert dock is window.runs.dock and dock.isVisibleTo(window) and "reverse" in dock.windowTitle()
    timeline = window.runs.timeline
    assert timeline.steps == [0, 4, 8, 12] and timeline.index() == 3
    assert timeline.step_label.text() == "step 12 (4/4)"
    assert window.controller.workspace.step == 12
    qtbot.waitUntil(lambda: "finished at step 12" in timeline.state_label.text())
    assert all(line.isVisible() and line.value() == 12 for line in curves.step_lines.values())


def test_scrubbing_shows_the_snapshot_in_every_panel_and_exports_that_step(
        make_main_window, qtbot, recorded_run, tmp_path):
    from explorer.decoding import beam_search  # noqa: F401 - the beam panel's engine loads
    from explorer.ui.panels.beam_tree import run_beam_search, summarize_result

    window = opened(make_main_window, qtbot, recorded_run)
    window.controller.prober.set_input("abcd", "dcba")  # the user's input stays across scrubs
    settled(window, qtbot, 12)
    latest = [m.weights.copy() for m in window.panels["attention"].snapshot.attention]
    scrub_to(window, qtbot, 4)
    workspace = window.controller.workspace
    assert window.controller.prober.input.text == ("abcd", "dcba")
    for panel_id in ("attention", "positional", "gradients", "beam", "step", "compare", "hidden",
                     "embeddings"):
        assert window.panels[panel_id].workspace is workspace, panel_id
    reference = independent_probe(recorded_run, 4, "abcd", "dcba")
    shown = window.panels["attention"].snapshot
    assert len(shown.attention) == len(reference.attention) > 0
    for ours, theirs in zip(shown.attention, reference.attention):
        np.testing.assert_allclose(ours.weights, theirs.weights, atol=1e-6)
    assert any(not np.allclose(a.weights, b) for a, b in zip(reference.attention, latest))
    assert window.panels["hidden"].snapshot.step == 4
    # the beam tree is the snapshot model's: the same search on the checkpoint loaded on its own
    beam = window.panels["beam"]
    qtbot.waitUntil(lambda: not beam.busy() and beam.result is not None, timeout=LOAD_MS)
    from explorer.runs import snapshot_dir
    from explorer.training.checkpoint import load_checkpoint

    alone = run_beam_search(load_checkpoint(snapshot_dir(recorded_run, 4)),
                            beam.source_box.text(), beam.form.settings())
    assert summarize_result(beam.result) == summarize_result(alone)
    # the curves keep the whole run and mark step 4
    curves = window.panels["curves"]
    assert curves.train.size == 12
    assert all(line.isVisible() and line.value() == 4 for line in curves.step_lines.values())
    assert window.runs.timeline.step_label.text() == "step 4 (2/4)"

    written = window.export_panels(["attention"], str(tmp_path / "export"))
    table = next(p for p in written if p.name == "attention_all_maps.csv")
    with open(table, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    cross = next(m for m in reference.attention if m.kind == "cross")
    exported = np.array([float(r["weight"]) for r in rows if r["kind"] == "cross"])
    np.testing.assert_allclose(exported, cross.weights.ravel(), atol=1e-6)


def test_keys_move_snapshot_by_snapshot(make_main_window, qtbot, recorded_run):
    window = opened(make_main_window, qtbot, recorded_run)
    actions = window.actions
    assert actions.previous_snapshot.shortcut().toString() == "Alt+Left"
    assert actions.next_snapshot.shortcut().toString() == "Alt+Right"
    window.show()
    qtbot.waitExposed(window)
    window.raise_()
    window.activateWindow()  # shortcuts reach the active window only
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window.runs.timeline, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    settled(window, qtbot, 8)
    actions.previous_snapshot.trigger()
    settled(window, qtbot, 4)
    actions.next_snapshot.trigger()
    settled(window, qtbot, 8)
    assert window.runs.timeline.index() == 2


def test_a_deleted_snapshot_is_a_one_line_error_and_the_app_goes_on(make_main_window, qtbot,
                                                                    own_run, tmp_path):
    window = opened(make_main_window, qtbot, own_run)
    shutil.rmtree(own_run / "snapshots" / "step-000004")
    with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as error:
        window.runs.timeline.slider.setValue(1)  # still listed: the watcher has not seen it yet
    message = error.args[0]
    assert "\n" not in message and "step 4" in message and "deleted" in message
    qtbot.waitUntil(lambda: window.runs.timeline.steps == [0, 8, 12])
    assert window.controller.workspace.step == 12 and window.runs.timeline.index() == 2
    scrub_to(window, qtbot, 8)
    # the snapshot on show is deleted: said in one line, the panels keep it from memory
    shutil.rmtree(own_run / "snapshots" / "step-000008")
    qtbot.waitUntil(lambda: window.runs.timeline.steps == [0, 12], timeout=10_000)
    assert "step 8 was deleted" in window.runs.timeline.state_label.text()
    assert window.runs.timeline.step_label.text() == "step 8 (deleted; shown from memory)"
    assert window.controller.workspace.step == 8
    assert window.export_panels(["attention"], str(tmp_path / "export"))


def test_training_in_the_app_refuses_scrubs_and_closes_a_viewed_run(make_main_window, qtbot,
                                                                   recorded_run):
    window = opened(make_main_window, qtbot, recorded_run)
    scrub_to(window, qtbot, 4)
    controller = window.controller
    controller.train(steps=10_000, paused=True)
    # the viewed run closed; the timeline follows the run this training writes instead
    assert window.runs.folder == controller.run_folder != recorded_run and not window.runs.viewer
    curves = window.panels["curves"]
    assert curves.train.view()[:, 0].tolist() == [1, 2, 3, 4]  # the snapshot's own history
    assert not any(line.isVisible() for line in curves.step_lines.values())
    # the app's own training run (what a GUI training writes): its timeline stays, scrubs wait
    window.runs.set_run(recorded_run, load_latest=False)
    assert window.runs.timeline.steps == [0, 4, 8, 12]
    window.runs.choose(0)
    assert "Stop training" in window.statusBar().currentMessage()
    assert controller.workspace.step == 4 and not controller.jobs.busy
    controller.stop_training()


@pytest.mark.parametrize("watch_rows", [True, False])
def test_metrics_appends_ask_for_a_check_unless_the_app_itself_writes_them(qtbot, own_run, watch_rows):
    """The app's own training (watch_rows=False) draws its steps as it makes them: its appends to
    metrics.jsonl wake no check; the rows are still read (at start, and at every poll)."""
    from explorer.ui.run_watch import RunWatcher

    watcher = RunWatcher(own_run, watch_rows=watch_rows)
    watcher.start()
    try:
        assert (str(own_run / "metrics.jsonl") in watcher._files.files()) == watch_rows
        assert str(own_run / "snapshots") in watcher._files.directories()
        assert any(row.get("step") == 12 for row in watcher.reader.rows)
    finally:
        watcher.stop()


def lock_holder(run):
    """A process that holds the run's FolderLock, as `explorer train --out` does while it writes."""
    code = ("import sys, time; from explorer.durable import FolderLock; "
            f"FolderLock({str(run)!r}).acquire(); print('locked', flush=True); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_run_written_elsewhere_grows_on_the_curves_and_timeline_then_stops(
        make_main_window, qtbot, own_run):
    from explorer.durable import JsonlAppender

    metrics = own_run / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"finished"' in line)
    metrics.write_text("".join(lines[:cut]))  # a run still being written
    shutil.rmtree(own_run / "snapshots" / "step-000012")
    holder = lock_holder(own_run)
    try:
        window = opened(make_main_window, qtbot, own_run)
        timeline, curves = window.runs.timeline, window.panels["curves"]
        qtbot.waitUntil(lambda: "following run reverse" in timeline.state_label.text())
        checks = window.runs.watcher.checks
        appender = JsonlAppender(metrics)
        for step in range(13, 33):  # one row at a time, as a trainer appends them
            appender.append([{"step": step, "loss": 1.0 / step, "lr": 0.01, "grad_norm": 0.5,
                              "grad_norm_clipped": 0.5}])
        appender.append([{"event": "eval", "step": 32, "val_loss": 0.25}])
        qtbot.waitUntil(lambda: curves.train.size == 32 and curves.evals.size == 4,
                        timeout=10_000)
        assert curves.train.view()[-1, 1] == pytest.approx(1 / 32)
        assert window.runs.watcher.checks - checks < 10  # 21 appends, a few coalesced checks
        # a new snapshot joins the timeline, and the panels, at the newest, follow it
        staging = own_run / "snapshots" / ".step-000032.new"  # a writer's atomic rename
        shutil.copytree(own_run / "snapshots" / "step-000008", staging)
        config = json.loads((staging / "config.json").read_text())
        (staging / "config.json").write_text(json.dumps({**config, "step": 32}))
        staging.rename(own_run / "snapshots" / "step-000032")
        qtbot.waitUntil(lambda: timeline.steps[-1] == 32, timeout=10_000)
        qtbot.waitUntil(lambda: window.controller.workspace.step == 32, timeout=LOAD_MS)
        assert "at step 32" in timeline.state_label.text()
        holder.kill()
        holder.wait()
        qtbot.waitUntil(lambda: "writer stopped (pid gone)" in timeline.state_label.text(),
                        timeout=15_000)
        appender.close()
    finally:
        holder.kill()
        holder.wait()


def test_following_explorer_train_in_another_process_until_it_finishes(make_main_window, qtbot,
                                                                      tmp_path, recorded_run):
    window = opened(make_main_window, qtbot, recorded_run)  # torch and the panels loaded: the
    appended = []  # live run then opens in a moment, long before its 150 steps are done
    window.bus.run_curves.connect(lambda update: appended.append(not update.reset))
    run = tmp_path / "live"
    command = [sys.executable, "-m", "explorer", "train", "--task", "reverse", "--arch", "seq2seq",
               *FAST, "--steps", "150", "--eval-every", "50", "--snapshot-every", "50",
               "--out", str(run)]
    writer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        qtbot.waitUntil(lambda: (run / "config.json").is_file() or writer.poll() is not None,
                        timeout=LOAD_MS)
        window.open_path(run)
        timeline = window.runs.timeline
        qtbot.waitUntil(lambda: "finished at step 150" in timeline.state_label.text(),
                        timeout=120_000)
        assert writer.wait(timeout=60) == 0, writer.stderr.read().decode()
    finally:
        writer.kill()
        writer.wait()
    reader = RunReader(run)
    reader.read_new()
    curves = window.panels["curves"]
    assert curves.train.view()[:, 0].tolist() == list(range(1, 151))
    np.testing.assert_allclose(curves.train.view()[:, 1], reader.curves().train["loss"])
    assert timeline.steps == [0, 50, 100, 150]
    assert any(appended)  # rows arrived while it ran, not only in one read at the end
    qtbot.waitUntil(lambda: not window.controller.jobs.busy, timeout=LOAD_MS)


def test_a_run_whose_model_cannot_load_leaves_no_curves_behind(make_main_window, qtbot,
                                                               recorded_run, tmp_path):
    """The curves are drawn from the rows before the model loads; a model that then fails to load
    (a torn weights file) is a one-line error, and the run's curves go with it."""
    broken = tmp_path / "broken"
    shutil.copytree(recorded_run, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    window = make_main_window()
    with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as error:
        window.open_path(broken)
    assert "\n" not in error.args[0]
    qtbot.waitUntil(lambda: not window.controller.jobs.busy, timeout=LOAD_MS)
    assert window.bus.run is None and window.runs.timeline.steps == []
    assert len(window.panels["curves"].train.view()) == 0
