"""The run folder `explorer train --out DIR` writes: its files, its rows, its snapshots, and the
refusals that keep two trainings from writing one run."""

import json
import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from explorer.cli import main
from explorer.runs import RunReader, layout, writer_alive
from explorer.training import load_checkpoint

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8", "--hidden", "16"]


def train(*args) -> int:
    return main(["train", "--task", "copy", "--arch", "seq2seq", *FAST, *args])


def metrics(folder):
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def test_train_writes_config_metrics_snapshots_and_the_latest_checkpoint(tmp_path, capsys):
    run = tmp_path / "run"
    assert train("--steps", "12", "--eval-every", "5", "--snapshot-every", "4",
                 "--out", str(run)) == 0
    config = json.loads((run / "config.json").read_text())
    section = config["run"]
    assert section["format"] == layout.RUN_FORMAT and section["seed"] == 0
    assert section["versions"]["torch"] == torch.__version__
    assert set(section["versions"]) == {"explorer", "torch", "python"}
    assert section["build"]["family"] == "seq2seq" and section["build"]["overrides"] == {
        "hidden_size": 16}
    assert config["step"] == 12 and config["train"]["steps"] == 12

    rows = metrics(run)
    assert rows[0]["event"] == "started" and rows[0]["train"]["batch_size"] == 8
    assert [r["step"] for r in rows if "event" not in r] == list(range(1, 13))
    assert [r["step"] for r in rows if r.get("event") == "eval"] == [5, 10, 12]
    assert [r["step"] for r in rows if r.get("event") == "snapshot"] == [0, 4, 8, 12]
    assert rows[-1] == {**rows[-1], "event": "finished", "step": 12, "reason": "done"}
    assert not (tmp_path / ".run.lock").exists()  # the folder's lock, released at the end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no staging left either
    assert not (run / layout.LATEST_STAGING).exists()

    # every snapshot opens on its own; the last one holds the same weights as the top level
    reader = RunReader(run)
    assert [s.step for s in reader.snapshots()] == [0, 4, 8, 12]
    for snapshot in reader.snapshots():
        assert load_checkpoint(snapshot.path).step == snapshot.step
    latest = load_file(run / "model.safetensors")
    last = load_file(run / "snapshots" / "step-000012" / "model.safetensors")
    first = load_file(run / "snapshots" / "step-000000" / "model.safetensors")
    assert all(torch.equal(latest[k], last[k]) for k in latest)
    assert not all(torch.equal(latest[k], first[k]) for k in latest)

    # the run folder is still a checkpoint: its history folds evaluations into their steps
    workspace = load_checkpoint(run)
    assert [r["step"] for r in workspace.history] == list(range(1, 13))
    assert "val_loss" in workspace.history[4] and "val_loss" not in workspace.history[3]
    scrubbed = reader.open_snapshot(8)
    assert scrubbed.step == 8 and [r["step"] for r in scrubbed.history] == list(range(1, 9))


def test_a_data_file_is_recorded_with_its_hash(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"a b {i}\tc d {i}\n" for i in range(40)))
    run = tmp_path / "run"
    assert main(["train", "--data", str(pairs), "--steps", "2", "--out", str(run), *FAST]) == 0
    files = json.loads((run / "config.json").read_text())["run"]["data_files"]
    assert files == {str(pairs): layout.file_sha256(pairs)}


def test_a_second_training_on_the_same_out_refuses_unless_resume(tmp_path, capsys):
    run = tmp_path / "run"
    assert train("--steps", "3", "--out", str(run)) == 0
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    capsys.readouterr()

    assert train("--steps", "3", "--out", str(run)) == 2
    err = capsys.readouterr().err
    assert err == (f"explorer train: error: {run}: already holds a run; continue it with "
                   f"--resume {run}, or choose another --out\n")
    assert before == {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}  # nothing lost

    assert main(["train", "--resume", str(run), "--steps", "5", *FAST[:-2]]) == 0
    rows = metrics(run)
    assert [r["event"] for r in rows if r.get("event") in ("started", "resumed")] == [
        "started", "resumed"]
    assert [r["step"] for r in rows if "event" not in r] == list(range(1, 6))


def test_a_folder_another_live_training_writes_is_refused_even_with_resume(tmp_path, capsys):
    run = tmp_path / "run"
    assert train("--steps", "2", "--out", str(run)) == 0
    holder = subprocess.Popen(  # another process holds the run's FolderLock, as a training does
        [sys.executable, "-c", "import sys, time; from explorer.durable import FolderLock; "
         "FolderLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(120)",
         str(run)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"locked\n"
        assert writer_alive(run) is True
        capsys.readouterr()
        assert main(["train", "--resume", str(run), "--steps", "4", *FAST[:-2]]) == 2
        err = capsys.readouterr().err
        assert f"pid {holder.pid}" in err and "is writing this folder" in err
        assert err.count("\n") == 1
    finally:
        holder.kill()  # SIGKILL: its lock file stays behind, naming a dead process
        holder.wait()
    assert writer_alive(run) is False  # stale: the next training takes the folder over
    assert main(["train", "--resume", str(run), "--steps", "4", *FAST[:-2]]) == 0
    assert json.loads((run / "config.json").read_text())["step"] == 4


def test_a_torn_last_row_is_read_up_to_and_cut_by_the_next_writer(tmp_path):
    run = tmp_path / "run"
    assert train("--steps", "3", "--out", str(run)) == 0
    with open(run / "metrics.jsonl", "ab") as out:
        out.write(b'{"step": 4, "loss": 1.2')  # a writer killed mid-row
    reader = RunReader(run)
    assert [r["step"] for r in reader.read_new() if "event" not in r] == [1, 2, 3]
    assert reader.bad_lines == 0
    assert [r["step"] for r in load_checkpoint(run).history] == [1, 2, 3]

    assert main(["train", "--resume", str(run), "--steps", "5", *FAST[:-2]]) == 0
    rows = metrics(run)  # every line whole again
    assert [r["step"] for r in rows if "event" not in r] == [1, 2, 3, 4, 5]


def test_a_deleted_snapshot_is_a_one_line_error(tmp_path):
    run = tmp_path / "run"
    assert train("--steps", "4", "--snapshot-every", "2", "--out", str(run)) == 0
    reader = RunReader(run)
    import shutil

    shutil.rmtree(reader.snapshots()[1].path)
    assert [s.step for s in reader.snapshots()] == [0, 4]
    with pytest.raises(Exception, match="no such snapshot") as error:
        reader.open_snapshot(2)
    assert "\n" not in str(error.value)


def test_bad_snapshot_every_is_refused_and_0_means_none(tmp_path, capsys):
    """0 means "no snapshots" on the command line as in the app's settings (issue 27)."""
    assert train("--steps", "2", "--snapshot-every", "-1", "--out", str(tmp_path / "r")) == 2
    assert "--snapshot-every must be 0 (no snapshots) or more" in capsys.readouterr().err
    run = tmp_path / "none"
    assert train("--steps", "2", "--snapshot-every", "0", "--out", str(run)) == 0
    assert RunReader(run).snapshots() == [] and not (run / layout.SNAPSHOTS_DIR).exists()
    assert json.loads((run / "config.json").read_text())["run"]["snapshot_every"] == 0


def test_saving_a_plain_checkpoint_over_a_run_is_refused(tmp_path):
    from explorer.errors import UserError
    from explorer.training import save_checkpoint

    run = tmp_path / "run"
    assert train("--steps", "2", "--snapshot-every", "1", "--out", str(run)) == 0
    workspace = load_checkpoint(run)
    with pytest.raises(UserError, match="holds a training run"):
        save_checkpoint(workspace, run)
    assert [s.step for s in RunReader(run).snapshots()] == [0, 1, 2]


def test_a_save_killed_between_its_moves_loads_and_is_finished_by_the_next_writer(
        tmp_path, monkeypatch, capsys):
    import explorer.runs.writer as writer_module

    real_replace = os.replace

    def killed_before_config(src, dst):  # the final save's weights move up, then the "kill"
        if os.path.basename(dst) == "config.json" and json.loads(open(src).read())["step"] == 3:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(writer_module.os, "replace", killed_before_config)
    run = tmp_path / "run"
    assert train("--steps", "3", "--save-every", "2", "--out", str(run)) == 130
    monkeypatch.undo()
    assert (run / layout.LATEST_STAGING / "config.json").is_file()  # the staged save, complete
    workspace = load_checkpoint(run)  # loads, at the step config.json names: never a lower one
    assert workspace.step == 2 and [r["step"] for r in workspace.history] == [1, 2]

    assert main(["train", "--resume", str(run), "--steps", "5", *FAST[:-2]]) == 0
    resumed = [r for r in metrics(run) if r.get("event") == "resumed"]
    assert [r["step"] for r in resumed] == [3]  # the next writer finished the moves first
    assert load_checkpoint(run).step == 5 and not (run / layout.LATEST_STAGING).exists()


def test_step_rows_are_written_together_and_never_behind_a_snapshot_or_checkpoint(
        tmp_path, monkeypatch):
    """Step rows wait (here: for ever) until another row, a snapshot, a checkpoint or the end
    writes them, in step order, so what is on disk is never ahead of the curves."""
    import explorer.runs.writer as writer_module
    from explorer.events import StepMetrics
    from explorer.training import Trainer
    from tests.training.conftest import make_tiny_config, make_tiny_workspace

    monkeypatch.setattr(writer_module, "ROWS_EVERY_S", float("inf"))
    workspace = make_tiny_workspace("gpt")
    trainer = Trainer(workspace, make_tiny_config(steps=10, eval_every=7))
    run = tmp_path / "run"
    writer = writer_module.RunWriter(run, snapshot_every=4)
    writer.claim(resume=False)
    writer.start(workspace, trainer)
    on_disk = []  # after each step: the last step row in metrics.jsonl
    weights = {}  # step -> the model's weights right after it
    for event in trainer.run():
        writer.record(event)
        if isinstance(event, StepMetrics):
            weights[event.step] = {k: v.clone() for k, v in workspace.model.state_dict().items()}
            if event.step == 6:
                writer.save_latest(workspace, trainer.config)  # an autosave
            steps = [r["step"] for r in metrics(run) if "event" not in r]
            on_disk.append(steps[-1] if steps else 0)
            assert steps == list(range(1, len(steps) + 1))  # whole, in order, no gap
    # nothing wrote the first rows; then the snapshots (steps 4, 8) and the autosave (6) wrote
    # the rows up to their step (a snapshot's own row, written once it is on disk, may add more)
    assert on_disk[:3] == [0, 0, 0]
    for step, last_row in enumerate(on_disk, start=1):
        assert last_row >= max([0] + [s for s in (4, 6, 8) if s <= step])
    writer.finish(workspace, event)  # the last event: TrainingFinished
    writer.close()
    rows = metrics(run)
    assert [r["step"] for r in rows if "event" not in r] == list(range(1, 11))
    assert [r["step"] for r in rows if r.get("event") == "eval"] == [7, 10]
    # the snapshots written beside the training hold the weights of their own step
    for step in (4, 8):
        saved = load_file(run / "snapshots" / f"step-{step:06d}" / "model.safetensors")
        assert all(torch.equal(saved[k], weights[step][k]) for k in saved)
        assert not all(torch.equal(saved[k], weights[step + 1][k]) for k in saved)
    assert [r["step"] for r in rows if r.get("event") == "snapshot"] == [0, 4, 8, 10]
    assert rows[-1]["event"] == "finished"
