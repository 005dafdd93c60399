"""Reading a run while another process writes it: whole rows only, none missed, and a clear end."""

import os
import subprocess
import sys

import pytest

from explorer.runs import RunFollower, RunReader, RunState
from explorer.durable import FolderLock
from explorer.durable import json_line as encode_row


def rows_file(folder, rows, tail=b""):
    folder.mkdir(exist_ok=True)
    with open(folder / "metrics.jsonl", "ab") as out:
        out.write(b"".join(encode_row(r) for r in rows) + tail)


def test_a_row_being_written_is_left_for_the_next_read(tmp_path):
    rows_file(tmp_path, [{"step": 1, "loss": 2.0}])
    reader = RunReader(tmp_path)
    line = encode_row({"step": 2, "loss": 1.5})
    with open(tmp_path / "metrics.jsonl", "ab") as out:
        out.write(line[:7])
        out.flush()
        assert reader.read_new() == [{"step": 1, "loss": 2.0}]
        assert reader.read_new() == []  # half a row: not yet
        out.write(line[7:])
        out.flush()
        assert reader.read_new() == [{"step": 2, "loss": 1.5}]
    assert reader.offset == os.path.getsize(tmp_path / "metrics.jsonl") and reader.bad_lines == 0


def test_a_damaged_line_is_counted_and_skipped_and_a_replaced_file_is_read_again(tmp_path):
    rows_file(tmp_path, [{"step": 1, "loss": 2.0}], tail=b"{not json\n")
    rows_file(tmp_path, [{"step": 2, "loss": 1.0}])
    reader = RunReader(tmp_path)
    assert [r["step"] for r in reader.read_new()] == [1, 2] and reader.bad_lines == 1
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(encode_row({"step": 7, "loss": 0.5}))
    os.replace(replacement, tmp_path / "metrics.jsonl")
    assert reader.read_new() == [{"step": 7, "loss": 0.5}] and reader.rows == [
        {"step": 7, "loss": 0.5}]


def test_curves_follow_a_resume_that_redid_steps(tmp_path):
    rows_file(tmp_path, [
        {"event": "started", "step": 0}, *({"step": s, "loss": 10.0 - s} for s in range(1, 6)),
        {"event": "eval", "step": 4, "val_loss": 3.0},
        {"event": "resumed", "step": 3},  # the checkpoint was at step 3 when the first one died
        *({"step": s, "loss": 100.0 + s} for s in range(4, 7)),
        {"event": "eval", "step": 6, "val_loss": 2.0, "bleu": 9.5},
    ])
    reader = RunReader(tmp_path)
    reader.read_new()
    curves = reader.curves()
    assert curves.train["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert curves.train["loss"].tolist() == [9.0, 8.0, 7.0, 104.0, 105.0, 106.0]
    assert curves.eval["step"].tolist() == [6] and curves.eval["bleu"].tolist() == [9.5]
    assert reader.history()[-1] == {"step": 6, "loss": 106.0, "val_loss": 2.0, "bleu": 9.5}
    assert reader.finished is None


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_follower_backs_off_and_says_when_the_writer_went_away(tmp_path):
    clock = FakeClock()
    rows_file(tmp_path, [{"event": "started", "step": 0}, {"step": 1, "loss": 1.0}])
    lock = FolderLock(tmp_path).acquire()  # the run's writer: us, alive
    follower = RunFollower(tmp_path, min_interval_s=0.1, max_interval_s=0.8, idle_after_s=5,
                           clock=clock)
    assert follower.poll().state == RunState.LIVE and follower.interval_s == 0.1
    intervals = []
    for _ in range(5):
        clock.now += 10
        update = follower.poll()
        intervals.append(follower.interval_s)
        assert update.rows == [] and update.state == RunState.LIVE  # quiet, but its writer lives
    assert intervals == [0.2, 0.4, 0.8, 0.8, 0.8]
    rows_file(tmp_path, [{"step": 2, "loss": 0.5}])
    assert follower.poll().rows == [{"step": 2, "loss": 0.5}] and follower.interval_s == 0.1

    lock.release()  # the writer went away without a `finished` row
    clock.now += 4
    assert follower.poll().state == RunState.LIVE
    clock.now += 2
    assert follower.poll().state == RunState.STOPPED
    rows_file(tmp_path, [{"event": "finished", "step": 2, "reason": "done"}])
    assert follower.poll().state == RunState.FINISHED


def test_notify_wakes_the_follower_at_once(tmp_path):
    import threading

    rows_file(tmp_path, [{"step": 1, "loss": 1.0}])
    lock = FolderLock(tmp_path).acquire()  # a live writer
    follower = RunFollower(tmp_path, min_interval_s=60, max_interval_s=60)
    updates = follower.follow(timeout_s=120)
    assert next(updates).rows == [{"step": 1, "loss": 1.0}]
    rows_file(tmp_path, [{"step": 2, "loss": 0.5}])
    timer = threading.Timer(0.05, follower.notify)  # what the app's file watcher does
    timer.start()
    assert next(updates).rows == [{"step": 2, "loss": 0.5}]  # long before the 60 s poll
    timer.join()
    lock.release()


def test_a_run_written_by_another_process_is_read_whole_while_it_grows(tmp_path):
    run = tmp_path / "run"
    command = [sys.executable, "-m", "explorer", "train", "--task", "copy", "--hidden", "16",
               "--steps", "200", "--eval-every", "100", "--snapshot-every", "100", "--batch-size",
               "8", "--threads", "1", "--device", "cpu", "--out", str(run)]
    run.mkdir()
    writer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        follower = RunFollower(run, min_interval_s=0.02, max_interval_s=0.2, idle_after_s=120)
        seen, batches, snapshots = [], 0, set()
        for update in follower.follow(timeout_s=240):
            assert not update.reset
            if update.rows:
                batches += 1
                seen.extend(update.rows)
            snapshots.update(s.step for s in update.snapshots)
            if update.state == RunState.FINISHED:
                break
        assert writer.wait(timeout=120) == 0, writer.stderr.read().decode()
    finally:
        writer.kill()
        writer.wait()
    assert follower.state == RunState.FINISHED and follower.reader.bad_lines == 0
    complete = RunReader(run)
    complete.read_new()
    assert seen == complete.rows  # no row missed, none twice, none torn
    assert [r["step"] for r in seen if "event" not in r] == list(range(1, 201))
    assert [r["step"] for r in seen if r.get("event") == "eval"] == [100, 200]
    assert batches >= 3  # it was read while it grew, not once at the end
    assert snapshots == {0, 100, 200}


def test_tensorboard_scalars_match_the_metrics(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from explorer.cli import main

    run = tmp_path / "run"
    assert main(["train", "--task", "copy", "--hidden", "16", "--steps", "6", "--eval-every", "3",
                 "--batch-size", "8", "--threads", "1", "--device", "cpu",
                 "--out", str(run)]) == 0
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    reader = RunReader(run)
    reader.read_new()
    curves = reader.curves()
    loss = events.Scalars("train/loss")
    assert [e.step for e in loss] == curves.train["step"].tolist()
    assert [e.value for e in loss] == pytest.approx(curves.train["loss"].tolist(), rel=1e-6)
    assert [e.step for e in events.Scalars("eval/val_loss")] == [3, 6]


def test_without_tensorboard_one_info_line_and_no_scalars(tmp_path, capsys, monkeypatch):
    from explorer.cli import main

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    run = tmp_path / "run"
    assert main(["train", "--task", "copy", "--hidden", "16", "--steps", "2", "--batch-size", "8",
                 "--threads", "1", "--device", "cpu", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert err.count("TensorBoard is not installed") == 1
    assert "info: TensorBoard is not installed" in err
    assert not (run / "tensorboard").exists()
