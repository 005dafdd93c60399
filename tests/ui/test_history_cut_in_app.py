"""The app says in one line that a run's history is cut: the timeline and status bar of an opened
run, and a message when the folder is opened as a checkpoint."""

from __future__ import annotations

import shutil

import pytest

from explorer.cli import main
from tests.runs.test_history_cut import FAST, cut_history

LOAD_MS = 60_000
CUT = "history cut at step 4 while the checkpoint is at step 8"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("cut") / "run"
    assert main(["train", "--task", "reverse", "--arch", "seq2seq", "--preset", "tiny",
                 "--steps", "8", "--eval-every", "0", "--snapshot-every", "4", "--out", str(run),
                 *FAST]) == 0
    return run


@pytest.fixture
def cut_run(trained, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    cut_history(run, keep_upto=4)
    return run


def test_an_opened_run_says_its_history_is_cut(make_main_window, qtbot, cut_run):
    window = make_main_window()
    window.open_path(cut_run)
    label = window.runs.timeline.state_label
    qtbot.waitUntil(lambda: CUT in label.text(), timeout=LOAD_MS)
    assert label.text() == f"run run: {CUT}"
    assert "writer stopped" not in window.statusBar().currentMessage()


def test_a_checkpoint_with_a_cut_history_says_so_when_opened(make_main_window, qtbot, cut_run):
    window = make_main_window()
    with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as shown:
        window.controller.open_checkpoint(cut_run)
    assert shown.args == [f"{cut_run}: {CUT}"]
    assert window.controller.workspace.step == 8  # opened all the same
