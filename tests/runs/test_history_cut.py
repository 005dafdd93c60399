"""A run whose metrics.jsonl was cut (a torn copy, a full disk) is never accepted silently: decode,
score, export and train --resume say in one line where the history ends and where the checkpoint
is; replay refuses, since the missing steps have no recorded losses to compare with."""

from __future__ import annotations

import json

import pytest

from explorer.cli import main

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8"]


def cut_history(run, keep_upto: int) -> None:
    """Drop every metrics.jsonl row after the step row of `keep_upto`, as a torn copy would."""
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = []
    for line in lines:
        row = json.loads(line)
        if row.get("event") is None and row["step"] > keep_upto:
            break
        kept.append(line)
    (run / "metrics.jsonl").write_text("".join(kept), encoding="utf-8")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    run = tmp_path_factory.mktemp("cut") / "run"
    assert main(["train", "--task", "reverse", "--arch", "seq2seq", "--preset", "tiny",
                 "--steps", "8", "--eval-every", "0", "--out", str(run), *FAST]) == 0
    return run


@pytest.fixture
def cut_run(trained, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained, run)
    cut_history(run, keep_upto=4)
    return run


def line_for(run) -> str:
    return f"warning: {run / 'metrics.jsonl'}: history cut at step 4 while the checkpoint is at step 8"


def test_a_whole_history_says_nothing(trained, capsys):
    capsys.readouterr()
    assert main(["decode", "--checkpoint", str(trained), "abc"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", [
    ["decode", "--checkpoint", "{run}", "abc"],
    ["score", "--checkpoint", "{run}", "--source", "abc", "--target", "cba"],
    ["export", "--checkpoint", "{run}", "--out", "{tmp}/figures", "--plots", "attention",
     "--format", "csv", "--input", "abc", "--target", "cba"],
    ["train", "--resume", "{run}", "--steps", "9", "--eval-every", "0", *FAST],
])
def test_each_command_says_where_the_history_is_cut(command, cut_run, tmp_path, capsys):
    capsys.readouterr()
    args = [a.format(run=cut_run, tmp=tmp_path) for a in command]
    assert main(args) == 0
    err = capsys.readouterr().err.splitlines()
    assert err.count(line_for(cut_run)) == 1, err


def test_replay_refuses_a_cut_history_and_says_what_it_could_not_replay(cut_run, tmp_path, capsys):
    capsys.readouterr()
    assert main(["replay", str(cut_run), "--out", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert err == (f"explorer replay: error: {cut_run / 'metrics.jsonl'}: history cut at step 4 "
                   "while the checkpoint is at step 8; steps 5-8 have no recorded losses to "
                   "replay against, so nothing was replayed\n")
    assert not (tmp_path / "again").exists()
