"""The app's curves skip a damaged line of metrics.jsonl with the note the CLI prints: the run's
state line when a run is opened, a message when its folder is opened as a checkpoint."""

from __future__ import annotations

import shutil

import pytest

from explorer.cli import main
from tests.runs.test_bad_history_line import BAD, FAST, insert_line

LOAD_MS = 60_000
NOTE = "line 4 is not a JSON object, skipped"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("bad") / "run"
    assert main(["train", "--task", "reverse", "--arch", "seq2seq", "--preset", "tiny",
                 "--steps", "8", "--eval-every", "0", "--out", str(run), *FAST]) == 0
    return run


@pytest.fixture
def damaged(trained, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    insert_line(run / "metrics.jsonl", after=3, text=BAD)
    return run


def test_an_opened_run_names_the_skipped_line(make_main_window, qtbot, damaged):
    window = make_main_window()
    window.open_path(damaged)
    label = window.runs.timeline.state_label
    qtbot.waitUntil(lambda: NOTE in label.text(), timeout=LOAD_MS)
    assert label.text() == f"run run: {NOTE}"


def test_a_checkpoint_with_a_bad_line_opens_and_says_so(make_main_window, qtbot, damaged):
    window = make_main_window()
    with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as shown:
        window.controller.open_checkpoint(damaged)
    assert shown.args == [f"{damaged}: {NOTE}"]
    assert window.controller.workspace.step == 8  # opened all the same
    steps = [row["step"] for row in window.controller.workspace.history]
    assert steps == list(range(1, 9))  # the curves: every step row, the bad line left out
