"""One damaged line in the middle of metrics.jsonl (`sed -i '3a not json at all'`) locks nothing:
decode, score, export and train --resume work and say in one line which line they skipped; the
history is the file's other rows; a resume appends after it whole rows only."""

from __future__ import annotations

import json
import shutil

import pytest

from explorer.cli import main
from explorer.runs import RunReader
from explorer.training import load_checkpoint

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8"]
BAD = "not json at all"


def insert_line(path, after: int, text: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:after] + [text + "\n"] + lines[after:]), encoding="utf-8")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("bad") / "run"
    assert main(["train", "--task", "reverse", "--arch", "seq2seq", "--preset", "tiny",
                 "--steps", "8", "--eval-every", "4", "--out", str(run), *FAST]) == 0
    return run


@pytest.fixture
def damaged(trained, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    insert_line(run / "metrics.jsonl", after=3, text=BAD)  # line 4
    return run


def warning(run) -> str:
    return f"warning: {run / 'metrics.jsonl'}: line 4 is not a JSON object, skipped"


@pytest.mark.parametrize("command", [
    ["decode", "--checkpoint", "{run}", "abc"],
    ["score", "--checkpoint", "{run}", "--source", "abc", "--target", "cba"],
    ["export", "--checkpoint", "{run}", "--out", "{tmp}/figures", "--plots", "curves,attention",
     "--format", "csv", "--input", "abc", "--target", "cba"],
    ["train", "--resume", "{run}", "--steps", "9", "--eval-every", "0", *FAST],
])
def test_each_command_works_and_names_the_bad_line_once(command, damaged, tmp_path, capsys):
    capsys.readouterr()
    assert main([a.format(run=damaged, tmp=tmp_path) for a in command]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err.count(warning(damaged)) == 1, err


def test_the_history_is_the_other_rows(trained, damaged):
    whole, skipping = load_checkpoint(trained), load_checkpoint(damaged)
    assert skipping.history == whole.history and skipping.history_bad_lines == (4,)
    reader = RunReader(damaged)
    reader.read_new()  # the curves' reader skips the same line and knows its number
    assert reader.bad_line_numbers == [4]
    assert reader.rows == [json.loads(line) for line in
                           (trained / "metrics.jsonl").read_text().splitlines()]


def test_a_resume_appends_whole_rows_after_the_bad_line(damaged, capsys):
    assert main(["train", "--resume", str(damaged), "--steps", "12", "--eval-every", "0",
                 *FAST]) == 0
    lines = (damaged / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines.count(BAD) == 1 and lines.index(BAD) == 3
    assert all(isinstance(json.loads(line), dict) for line in lines[4:])
    resumed = load_checkpoint(damaged)
    assert [row["step"] for row in resumed.history] == list(range(1, 13))
    assert resumed.history_bad_lines == (4,)
