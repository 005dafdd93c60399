"""Every training in the window writes a run folder from the training thread; autosave; faults while
training (a full disk, a data file deleted or changed, a NaN loss) keep the app alive and the last
good checkpoint on disk."""

from __future__ import annotations

import errno
import json
import re
import threading

import pytest

from explorer.runs import RunReader


def train(window, qtbot, steps: int):
    with qtbot.waitSignal(window.controller.training_finished, timeout=60_000) as done:
        window.controller.train(steps=steps)
    return done.args[0]


def config_step(folder) -> int:
    return json.loads((folder / "config.json").read_text())["step"]


def spy_threads(monkeypatch, cls, name: str) -> list:
    """Record the thread each call of cls.name runs in."""
    original = getattr(cls, name)
    threads = []

    def spy(self, *args, **kwargs):
        threads.append(threading.current_thread())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, spy)
    return threads


def test_training_writes_one_run_that_grows_until_the_model_changes(
        make_main_window, qtbot, tiny_workspace, tiny_task_spec, isolated_settings, monkeypatch):
    from explorer.runs.writer import RunWriter
    from explorer.training.setup import build_workspace

    record_threads = spy_threads(monkeypatch, RunWriter, "record")
    save_threads = spy_threads(monkeypatch, RunWriter, "save_latest")
    window = make_main_window()
    controller = window.controller
    controller.set_workspace(tiny_workspace)
    announced = []
    window.bus.run_folder_changed.connect(announced.append)
    assert controller.run_folder is None
    assert train(window, qtbot, 6).reason == "done"

    folder = controller.run_folder
    root = controller.runs.root
    assert str(root).startswith(isolated_settings.value("runs/data_dir"))  # not the user's
    assert folder.parent == root and re.fullmatch(r"\d{8}-\d{6}-seq2seq", folder.name)
    assert announced == [str(folder)]  # (the folder exists from then on: a viewer may open it)
    reader = RunReader(folder)
    reader.read_new()
    losses = [row["loss"] for row in reader.history()]
    assert losses == pytest.approx([row["loss"] for row in tiny_workspace.history])
    assert config_step(folder) == 6 and (folder / "optimizer.pt").is_file()
    assert [s.step for s in reader.snapshots()] == [0, 6]  # the start and the end (every 100)
    assert reader.finished["reason"] == "done"
    assert not (folder / "tensorboard").exists()  # only when asked for (Autosave and runs…)

    assert train(window, qtbot, 4).reason == "done"  # the same workspace: the same run
    assert controller.run_folder == folder
    reader.read_new()
    assert [row["step"] for row in reader.history()] == list(range(1, 11))
    assert [r["event"] for r in reader.rows if r.get("event") in ("started", "resumed")] == [
        "started", "resumed"]
    assert config_step(folder) == 10
    # nothing was written on the GUI thread
    assert record_threads and save_threads
    assert threading.main_thread() not in record_threads + save_threads

    other = build_workspace(tiny_task_spec, "transformer", preset="tiny")
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=20_000):
        controller.set_workspace(other)
    assert controller.run_folder is None and announced[-1] == ""
    assert (folder / ".app-closed").is_file()  # let go of cleanly: never offered for recovery
    train(window, qtbot, 2)
    assert controller.run_folder != folder and controller.run_folder.name.endswith("transformer")


def test_autosave_writes_a_resumable_checkpoint_every_few_minutes_and_at_a_pause(
        make_main_window, qtbot, tiny_workspace, monkeypatch):
    from explorer.runs import app_runs
    from explorer.runs.writer import RunWriter
    from explorer.training.checkpoint import load_checkpoint

    save_threads = spy_threads(monkeypatch, RunWriter, "save_latest")
    window = make_main_window()
    keeper = window.controller.runs
    window.actions.autosave.trigger()  # Train ▸ Autosave and runs…
    dialog = window.last_dialog
    assert dialog.minutes.value() == 5.0 and dialog.minutes.toolTip()
    dialog.minutes.setValue(0.0)
    dialog.keep.setValue(3)
    assert not dialog.tensorboard.isChecked()
    dialog.tensorboard.setChecked(True)
    dialog.accept()
    assert keeper.setting("autosave_minutes") == 0.0 and keeper.setting("keep") == 3
    assert keeper.setting("tensorboard") == 1

    window.controller.set_workspace(tiny_workspace)
    window.controller.train(steps=100_000)
    recorder = keeper.recorder
    qtbot.waitUntil(lambda: tiny_workspace.step >= 3, timeout=30_000)
    assert recorder.autosaves == 0  # off
    keeper.set_setting("autosave_minutes", 0.001)  # 60 ms, applied to the running training
    qtbot.waitUntil(lambda: recorder.autosaves >= 2, timeout=30_000)
    keeper.set_setting("autosave_minutes", 60.0)
    monkeypatch.setattr(app_runs, "PAUSE_SAVE_AFTER_S", 0.0)
    saves = recorder.autosaves
    window.controller.pause()  # the step under way ends, then the paused state is saved
    qtbot.waitUntil(lambda: recorder.autosaves == saves + 1, timeout=30_000)
    assert recorder.saved_step == tiny_workspace.step  # nothing trained is left unsaved
    saved = load_checkpoint(keeper.folder)  # complete and resume-able while training is paused
    assert 0 < saved.step <= tiny_workspace.step
    assert saved.training_state is not None and saved.training_state["optimizer"]["state"]
    assert [row["step"] for row in saved.history] == list(range(1, saved.step + 1))
    window.controller.stop_training()
    assert threading.main_thread() not in save_threads


def test_a_full_disk_during_saves_is_one_line_and_the_old_checkpoint_survives(
        make_main_window, qtbot, tiny_workspace, monkeypatch, tmp_path):
    import explorer.training.checkpoint as checkpoint

    window = make_main_window()
    controller = window.controller
    controller.set_workspace(tiny_workspace)
    train(window, qtbot, 3)
    folder = controller.run_folder
    manual = window.save_checkpoint(tmp_path / "mine")
    assert manual is not None and config_step(manual) == 3

    original = checkpoint._write

    def full_disk(workspace, *args, **kwargs):
        if workspace.step > 3:  # the run's start (step 3) saves; every later save fails
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(workspace, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "_write", full_disk)
    controller.runs.set_setting("autosave_minutes", 0.0005)
    errors = []
    window.error_shown.connect(errors.append)
    finished = train(window, qtbot, 12)
    assert finished.reason == "done" and tiny_workspace.step == 15  # training went on
    assert errors and all("\n" not in e and "disk is full" in e for e in errors)
    assert errors[0].startswith("autosave failed:") and "step 3 is intact" in errors[0]
    assert len([e for e in errors if e.startswith("autosave")]) == 1  # once, not every save
    assert config_step(folder) == 3  # the last good checkpoint is what the folder holds
    from explorer.training.checkpoint import load_checkpoint

    assert load_checkpoint(folder).step == 3
    assert window.save_checkpoint(tmp_path / "mine") is None  # the manual save: the same
    assert "disk is full" in errors[-1] and config_step(tmp_path / "mine") == 3
    for box in list(window.error_boxes):
        box.accept()

    monkeypatch.setattr(checkpoint, "_write", original)  # space again: the app goes on
    train(window, qtbot, 2)
    assert config_step(folder) == 17


@pytest.mark.parametrize("fault", ["nan", "oom"])
def test_nan_loss_or_out_of_memory_says_so_in_one_line_and_keeps_the_last_good_weights(
        make_main_window, qtbot, tiny_workspace, monkeypatch, fault):
    import torch

    import explorer.training.engine as engine

    original = engine.compute_loss
    calls = {"n": 0}

    def faulty(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:
            if fault == "oom":  # simulated: the real one is checked on a GPU (issue 16)
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8 GiB")
            output = original(*args, **kwargs)
            output.loss = output.loss * float("nan")
            return output
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "compute_loss", faulty)
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    errors = []
    window.error_shown.connect(errors.append)
    finished = train(window, qtbot, 10)
    good = tiny_workspace.step
    assert finished.reason == fault and finished.step == good and 0 < good < 4
    assert len(errors) == 1 and "\n" not in errors[0]
    assert ("out of memory" if fault == "oom" else "NaN") in errors[0]
    folder = window.controller.run_folder
    reader = RunReader(folder)
    reader.read_new()
    assert reader.finished["reason"] == fault
    assert config_step(folder) < 4  # the run's checkpoint never holds the faulty step's weights
    assert train(window, qtbot, 2).reason == "done" and tiny_workspace.step == good + 2


@pytest.mark.parametrize("fault", ["deleted", "changed"])
def test_a_data_file_deleted_or_changed_mid_training_does_not_stop_it(
        make_main_window, qtbot, tmp_path, fault):
    from explorer.training.config import TrainConfig
    from explorer.training.setup import DataSpec, build_workspace

    text = tmp_path / "corpus.txt"
    text.write_text("".join(f"the cat {i} sat on the mat\n" for i in range(60)))
    workspace = build_workspace(DataSpec(text=str(text)), "rnn-lm", preset="tiny")
    workspace.train_config = TrainConfig(batch_size=4, eval_every=5, eval_examples=4, seed=0)
    window = make_main_window()
    controller = window.controller
    controller.set_workspace(workspace)
    errors = []
    window.error_shown.connect(errors.append)
    with qtbot.waitSignal(controller.training_finished, timeout=60_000):
        with qtbot.waitSignal(window.bus.step_metrics, timeout=30_000):
            controller.train(steps=12)
        if fault == "deleted":
            text.unlink()
        else:
            text.write_text("something else entirely\n")
    assert workspace.step == 12 and not errors
    assert train(window, qtbot, 3).reason == "done"  # a new segment of the same run
    assert not errors and config_step(controller.run_folder) == 15


def test_the_timeline_follows_the_apps_own_run_and_scrubs_it_after_training(
        make_main_window, qtbot, tiny_workspace, isolated_settings):
    """Training in the window writes a run; its snapshots join the timeline while it trains, and
    once it stops the user scrubs back to one: the panels get that snapshot's weights."""
    import torch

    from explorer.training.checkpoint import load_checkpoint

    isolated_settings.setValue("runs/snapshot_every", 2)
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    assert train(window, qtbot, 6).reason == "done"
    folder = window.controller.run_folder
    session = window.runs
    assert session.folder == folder and not session.viewer
    qtbot.waitUntil(lambda: [p.step for p in session.positions] == [0, 2, 4, 6], timeout=10_000)
    assert window.bus.run is not None

    with qtbot.waitSignal(window.bus.run_step, timeout=60_000,
                          check_params_cb=lambda step: step == 2):
        session.choose(1)
    shown = window.controller.workspace
    expected = load_checkpoint(folder / "snapshots" / "step-000002", load_data=False).model
    for name, value in expected.state_dict().items():
        assert torch.equal(shown.model.state_dict()[name], value), name
    assert session.folder == folder  # the scrub kept the timeline
