"""Recovery on relaunch: after a crash (a SIGKILLed training, a stale lock of a dead process) the
window offers the run back once it has painted; Reopen continues it, Discard stops the offer, and a
clean exit leaves nothing to offer."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from explorer.durable import FolderLock


def config_step(folder) -> int:
    try:
        return json.loads((folder / "config.json").read_text())["step"]
    except (OSError, ValueError, KeyError):
        return 0


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def crash_copy(folder):
    """What a crash leaves: the run folder without the clean-exit marker, locked by a dead pid."""
    crashed = folder.with_name(folder.name.replace("-", "-1-", 1))
    shutil.copytree(folder, crashed)
    (crashed / ".app-closed").unlink()
    FolderLock(crashed).path.write_text(f"{dead_pid()} {os.uname().nodename}\n")
    return crashed


def shown_window(make_main_window, qtbot):
    """A window that has painted, with the recovery offer (if any) on screen."""
    window = make_main_window()
    offers = []
    window.recovery.offered.connect(offers.append)
    window.show()
    qtbot.waitUntil(lambda: window.first_paint_time is not None, timeout=10_000)
    qtbot.waitUntil(lambda: window.recovery.checks > 0, timeout=10_000)
    return window, offers


def test_a_training_killed_with_sigkill_is_offered_and_reopened_where_it_stopped(
        make_main_window, qtbot, isolated_settings):
    from explorer.ui.autosave import runs_root

    folder = runs_root(isolated_settings) / "20260101-120000-seq2seq"
    folder.parent.mkdir(parents=True)
    trainer = subprocess.Popen(
        [sys.executable, "-m", "explorer", "train", "--arch", "seq2seq", "--task", "reverse",
         "--preset", "tiny", "--steps", "100000", "--save-every", "4", "--batch-size", "8",
         "--eval-every", "1000", "--out", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while config_step(folder) < 8 and trainer.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # another process: nothing to wait on but its files
        assert trainer.poll() is None, "the training ended before it was killed"
    finally:
        trainer.send_signal(signal.SIGKILL)
        trainer.wait()
    saved = config_step(folder)
    assert saved >= 8 and FolderLock(folder).path.exists()  # a stale lock of a dead process

    window, offers = shown_window(make_main_window, qtbot)
    assert len(offers) == 1
    dialog = offers[0]
    assert dialog.isVisible() and window.first_paint_time is not None
    text = dialog.message.text()
    assert "Training of seq2seq on reverse stopped unexpectedly at step" in text
    assert dialog.run.saved_step == saved and dialog.run.last_step >= saved
    assert str(folder) in dialog.folder.text()
    with qtbot.waitSignal(window.recovery.reopened, timeout=60_000) as reopened:
        dialog.reopen_button.click()
    workspace = reopened.args[0]
    assert workspace is window.controller.workspace and workspace.step == saved
    assert workspace.training_state is not None  # the optimizer too: a true resume
    assert window.controller.run_folder == folder  # Train appends to the same run

    with qtbot.waitSignal(window.controller.training_finished, timeout=60_000):
        window.controller.train(steps=3)
    assert config_step(folder) == saved + 3
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["event"] == "finished"
    assert any(r.get("event") == "resumed" and r["step"] == saved for r in rows)
    window.close()  # a clean exit
    assert (folder / ".app-closed").is_file()

    again, offers = shown_window(make_main_window, qtbot)
    assert offers == [] and again.recovery.dialog is None


def test_discard_stops_the_offer_and_deletes_nothing(make_main_window, qtbot, tiny_workspace):
    first = make_main_window()
    first.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(first.controller.training_finished, timeout=60_000):
        first.controller.train(steps=4)
    finished = first.controller.run_folder
    first.close()
    crashed = crash_copy(finished)

    window, offers = shown_window(make_main_window, qtbot)
    assert [dialog.run.folder for dialog in offers] == [crashed]  # the cleanly closed one: not
    dialog = offers[0]
    assert dialog.run.saved_step == 4
    assert dialog.discard_button.toolTip() and dialog.reopen_button.toolTip()
    dialog.discard_button.click()
    assert (crashed / ".app-discarded").is_file() and (crashed / "model.safetensors").is_file()
    assert window.controller.workspace is None  # nothing was opened
    window.recovery.offer_next()
    assert window.recovery.dialog is None


def test_escape_asks_again_next_time_and_a_smoke_style_data_dir_offers_nothing(
        make_main_window, qtbot, tiny_workspace, isolated_settings, tmp_path):
    first = make_main_window()
    first.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(first.controller.training_finished, timeout=60_000):
        first.controller.train(steps=2)
    folder = first.controller.run_folder
    from explorer import durable

    keeper = first.controller.runs  # "crash": the process dies and the kernel frees its lock,
    lock, keeper._lock, keeper.folder = keeper._lock, None, None  # but its lock file stays
    os.close(lock._fd)
    durable._held.pop(lock._key())
    FolderLock(folder).path.write_text(f"{dead_pid()} {os.uname().nodename}\n")
    first.close()

    window, offers = shown_window(make_main_window, qtbot)
    assert len(offers) == 1
    offers[0].reject()  # Escape: later
    assert not (folder / ".app-discarded").exists()
    again, offers = shown_window(make_main_window, qtbot)
    assert len(offers) == 1
    offers[0].done(2)  # Discard

    isolated_settings.setValue("runs/data_dir", str(tmp_path / "elsewhere"))
    fresh, offers = shown_window(make_main_window, qtbot)
    assert offers == []


def test_a_run_whose_data_file_is_gone_reopens_with_a_one_line_message(
        make_main_window, qtbot, tmp_path):
    from explorer.training.config import TrainConfig
    from explorer.training.setup import DataSpec, build_workspace

    text = tmp_path / "corpus.txt"
    text.write_text("".join(f"the cat {i} sat on the mat\n" for i in range(60)))
    workspace = build_workspace(DataSpec(text=str(text)), "rnn-lm", preset="tiny")
    workspace.train_config = TrainConfig(batch_size=4, eval_every=5, eval_examples=4, seed=0)
    first = make_main_window()
    first.controller.set_workspace(workspace)
    with qtbot.waitSignal(first.controller.training_finished, timeout=60_000):
        first.controller.train(steps=3)
    folder = first.controller.run_folder
    first.close()
    crashed = crash_copy(folder)
    text.unlink()

    window, offers = shown_window(make_main_window, qtbot)
    assert "rnn-lm on corpus.txt" in offers[0].message.text()
    errors = []
    window.error_shown.connect(errors.append)
    with qtbot.waitSignal(window.recovery.reopened, timeout=60_000) as reopened:
        offers[0].reopen_button.click()
    assert reopened.args[0].step == 3 and reopened.args[0].data is None  # the model is open
    assert len(errors) == 1 and "training data cannot be read" in errors[0]
    assert window.controller.run_folder == crashed
