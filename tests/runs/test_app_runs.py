"""The app's run folders without Qt: naming, which runs were cut short, and keeping the last few."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from explorer.durable import FolderLock
from explorer.runs.app_runs import (
    CLOSED, DISCARDED, KEEP, interrupted_runs, mark, new_run_folder, prune_runs, run_folders,
)


def dead_pid() -> int:
    """The pid of a process that has exited."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def fake_run(root, name: str, step: int = 7, marker: str | None = None, lock_pid=None):
    """A run folder as far as these functions look: config.json with a model and a step, rows."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(
        {"model": {"family": "gpt"}, "task": "brackets", "step": step, "run": {}}))
    rows = [{"step": s, "loss": 1.0} for s in range(1, step + 3)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if marker:
        mark(folder, marker)
    if lock_pid is not None:
        FolderLock(folder).path.write_text(f"{lock_pid} {os.uname().nodename}\n")
    return folder


def test_new_run_folders_are_named_by_time_and_family_and_never_collide(tmp_path):
    first = new_run_folder(tmp_path, "seq2seq", now=0)
    first.mkdir()
    second = new_run_folder(tmp_path, "seq2seq", now=0)
    assert first.name.endswith("-seq2seq") and first.name[:8].isdigit()
    assert second.name == first.name + "-2"


def test_a_run_with_a_dead_writer_and_no_marker_is_interrupted(tmp_path):
    crashed = fake_run(tmp_path, "20260101-000003-gpt", lock_pid=dead_pid())
    fake_run(tmp_path, "20260101-000002-gpt", marker=CLOSED)
    fake_run(tmp_path, "20260101-000001-gpt", marker=DISCARDED)
    (tmp_path / "20260101-000004-gpt").mkdir()  # nothing saved yet: nothing to reopen
    live = fake_run(tmp_path, "20260101-000005-gpt")
    with FolderLock(live):  # this process writes it: alive
        found = interrupted_runs(tmp_path)
    assert [run.folder for run in found] == [crashed]
    run = found[0]
    assert (run.model, run.saved_step, run.last_step) == ("gpt on brackets", 7, 9)
    assert run.saved_at == (crashed / "config.json").stat().st_mtime


def test_pruning_keeps_the_newest_the_kept_the_live_the_open_and_the_unanswered(tmp_path):
    names = [f"20260101-0000{i:02d}-gpt" for i in range(10)]  # oldest first
    for name in names:
        fake_run(tmp_path, name, marker=CLOSED)
    mark(tmp_path / names[0], KEEP)
    unanswered = tmp_path / "20260100-000000-gpt"
    fake_run(tmp_path, unanswered.name, lock_pid=dead_pid())
    in_use = tmp_path / names[1]
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom explorer.durable import FolderLock\n"
         f"FolderLock({str(tmp_path / names[2])!r}).acquire()\nprint('locked', flush=True)\n"
         "time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        deleted = prune_runs(tmp_path, keep=3, in_use=(in_use,))
    finally:
        holder.kill()
        holder.wait()
    kept = {p.name for p in run_folders(tmp_path)}
    assert kept == {*names[-3:], names[0], names[1], names[2], unanswered.name}
    assert sorted(p.name for p in deleted) == names[3:7]
    assert not any(FolderLock(p).path.exists() for p in deleted)


def test_pruning_reports_only_what_it_removed_and_never_follows_a_linked_run(tmp_path):
    root = tmp_path / "runs"
    outside = fake_run(tmp_path / "elsewhere", "20250101-000000-gpt", marker=CLOSED)
    linked = root / "20250101-000000-gpt"  # oldest: first in line to be pruned
    root.mkdir()
    linked.symlink_to(outside, target_is_directory=True)
    names = [f"20260101-0000{i:02d}-gpt" for i in range(3)]
    for name in names:
        fake_run(root, name, marker=CLOSED)
    deleted = prune_runs(root, keep=1)
    assert sorted(p.name for p in deleted) == names[:2]
    assert all(not os.path.lexists(p) for p in deleted)  # what it reports is gone
    assert linked.is_symlink() and (outside / "config.json").is_file()  # nothing outside touched
