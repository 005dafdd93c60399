""""Steps" means one thing: `explorer train --steps N` and the Training dock's "train until step"
both train until step N (after a resume, too); and the timeline names the step the panels show,
during the app's own training and after it stops, in a line that is never cut."""

from __future__ import annotations

import json
import shutil

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QFormLayout

from explorer.cli import main

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8", "--hidden", "16"]
TRAIN_MS = 60_000


def saved_step(folder) -> int:
    return json.loads((folder / "config.json").read_text())["step"]


def trained_by_action(window, qtbot) -> int:
    """Press Train (Ctrl+T) and wait for the run to end; the model's step."""
    with qtbot.waitSignal(window.controller.training_finished, timeout=TRAIN_MS):
        window.actions.train.trigger()
    qtbot.waitUntil(lambda: window.controller.state == "idle", timeout=TRAIN_MS)
    return window.controller.workspace.step


def test_cli_and_app_both_train_until_step_n_after_a_resume(make_main_window, qtbot, tmp_path):
    cli_run, app_run, pairs = tmp_path / "cli", tmp_path / "app", tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{w}\t{w[::-1]}\n" for w in ("abc", "bcd", "cde", "dea") * 5))
    assert main(["train", "--data", str(pairs), "--arch", "seq2seq", *FAST, "--steps", "4",
                 "--out", str(cli_run)]) == 0
    shutil.copytree(cli_run, app_run)
    assert main(["train", "--resume", str(cli_run), "--steps", "7"]) == 0
    assert saved_step(cli_run) == 7  # until step 7: 3 more, not 7 more

    window = make_main_window()
    controls = window.controls
    form = controls.findChild(QFormLayout)
    assert form.labelForField(controls.steps).text() == "train until step"
    assert "explorer train --steps N" in controls.steps.toolTip()
    controls.steps.setValue(7)
    with qtbot.waitSignal(window.controller.training_finished, timeout=TRAIN_MS):
        window.controller.resume_from(app_run, steps=controls.steps_to_train)  # Train ▸ Resume
    qtbot.waitUntil(lambda: window.controller.state == "idle", timeout=TRAIN_MS)
    assert window.controller.workspace.step == 7  # the same step as the CLI's

    # reached: the field moves on by as many steps again, and Train goes there
    assert controls.steps.value() == 10
    assert trained_by_action(window, qtbot) == 10
    assert controls.steps.value() == 13
    # a field set past the model's step is where Train stops, however far
    controls.steps.setValue(12)
    assert trained_by_action(window, qtbot) == 12
    assert controls.steps.value() == 14


def test_a_stopped_training_goes_on_to_the_same_step(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    controls = window.controls
    assert controls.steps.value() == 1000  # ahead of the new model's step 0: kept
    controls.steps.setValue(30)
    window.actions.train.trigger()
    qtbot.waitUntil(lambda: window.controller.workspace.step >= 3, timeout=TRAIN_MS)
    window.actions.stop.trigger()
    stopped_at = window.controller.workspace.step
    assert 3 <= stopped_at < 30 and controls.steps.value() == 30
    assert trained_by_action(window, qtbot) == 30


def text_fits(label) -> bool:
    """The label shows its whole text (wrapped lines included) inside its rectangle."""
    flags = int(Qt.TextFlag.TextWordWrap) if label.wordWrap() else 0
    needed = label.fontMetrics().boundingRect(QRect(0, 0, label.width(), 100_000), flags,
                                              label.text())
    return needed.width() <= label.width() and needed.height() <= label.height()


def test_the_timeline_names_the_step_the_panels_show(make_main_window, qtbot, tiny_workspace,
                                                     isolated_settings):
    isolated_settings.setValue("runs/snapshot_every", 1000)  # snapshots of step 0 and the last
    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    window.controller.set_workspace(tiny_workspace)
    attention, timeline = window.panels["attention"], window.runs.timeline
    window.controller.train(steps=100_000)
    qtbot.waitUntil(lambda: window.bus.run is not None and attention.snapshot is not None
                    and attention.snapshot.step > 0, timeout=TRAIN_MS)
    qtbot.waitUntil(lambda: timeline.step_label.text().startswith(
        f"step {attention.snapshot.step} "), timeout=TRAIN_MS)
    assert timeline.step_label.text() == f"step {attention.snapshot.step} (training)"

    window.controller.stop_training()
    step = window.controller.workspace.step
    # the panels are probed again on the weights training stopped at, and the timeline says so
    qtbot.waitUntil(lambda: attention.snapshot.step == step and not window.bus.probing
                    and timeline.steps[-1:] == [step], timeout=TRAIN_MS)
    qtbot.waitUntil(lambda: timeline.step_label.text() == f"step {step} (2/2)", timeout=TRAIN_MS)
    qtbot.waitUntil(lambda: f"finished at step {step} (stopped)" in timeline.state_label.text(),
                    timeout=TRAIN_MS)
    qtbot.waitUntil(lambda: text_fits(timeline.state_label) and text_fits(timeline.step_label),
                    timeout=5_000)
