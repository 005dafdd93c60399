"""Crash-safe checkpoints: atomic replacement, the folder lock, full disks, torn metrics, and the
faults `explorer train` meets while it trains (signals, NaN, out of memory, data that changes)."""

import errno
import json
import os
import signal
import subprocess
import sys
import threading

import pytest
import torch

import explorer.durable as durable
import explorer.training.engine as engine_module
from explorer.cli import main
from explorer.durable import FolderLock, append_jsonl, read_jsonl, repair_jsonl
from explorer.errors import UserError
from explorer.training import Trainer, load_checkpoint, save_checkpoint
from explorer.training.autosave import Autosave

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "4", "--eval-every", "0"]
TINY_PAIRS = ["--task", "copy", "--arch", "seq2seq", "--hidden", "8"]


def saved_step(folder) -> int:
    return json.loads((folder / "config.json").read_text())["step"]


# -- the lock --------------------------------------------------------------------------------------


def hold_lock_in_another_process(folder):
    code = ("import sys, time; from explorer.durable import FolderLock; "
            "FolderLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(120)")
    process = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE)
    assert process.stdout.readline() == b"locked\n"
    return process


def test_a_second_process_is_refused_until_the_first_dies(tmp_path, tiny_workspace, capsys):
    folder = tmp_path / "ck"
    holder = hold_lock_in_another_process(folder)
    try:
        with pytest.raises(UserError, match=rf"another explorer process \(pid {holder.pid}\)"):
            save_checkpoint(tiny_workspace("gpt"), folder)
        assert main(["train", *TINY_PAIRS, "--steps", "1", "--out", str(folder), *FAST]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"pid {holder.pid}" in err and "Traceback" not in err
    finally:
        holder.kill()  # SIGKILL: the lock file stays behind, naming a dead process
        holder.wait()
    assert (tmp_path / ".ck.lock").read_text().startswith(f"{holder.pid} ")
    save_checkpoint(tiny_workspace("gpt"), folder)  # the stale lock is taken over
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    lock = FolderLock(tmp_path / "ck")
    with lock, FolderLock(tmp_path / "ck"):
        assert (tmp_path / ".ck.lock").read_text().split()[0] == str(os.getpid())
    assert not (tmp_path / ".ck.lock").exists()


# -- atomic replacement ----------------------------------------------------------------------------


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_failed_save_leaves_the_old_checkpoint_and_no_debris(
    tmp_path, monkeypatch, tiny_workspace, exchange
):
    if not exchange:
        monkeypatch.setattr(durable, "_exchange", lambda a, b: False)
    workspace = tiny_workspace("gpt")
    folder = save_checkpoint(workspace, tmp_path / "ck")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    workspace.step = 7
    save_checkpoint(workspace, folder)  # a good save replaces it
    assert saved_step(folder) == 7

    def full_disk(path, rows):  # the last file written: everything else is in the staging folder
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr("explorer.training.checkpoint.write_jsonl", full_disk)
    workspace.step = 8
    with pytest.raises(UserError, match="disk is full.*previous checkpoint there is unchanged"):
        save_checkpoint(workspace, folder)
    assert saved_step(folder) == 7 and set(before) == {p.name for p in folder.iterdir()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_a_kill_between_the_two_renames_is_recovered(tmp_path, tiny_workspace):
    """Without renameat2 the old folder is moved aside first; a kill right then leaves it as
    .ck.old and no ck (and maybe a complete staging folder): loading finds it, saving repairs."""
    workspace = tiny_workspace("gpt")
    save_checkpoint(workspace, tmp_path / "ck")
    (tmp_path / "ck").rename(tmp_path / ".ck.old")
    (tmp_path / ".ck.new-abc").mkdir()
    (tmp_path / ".ck.new-abc" / "config.json").write_text("{half")
    assert load_checkpoint(tmp_path / "ck").step == 0
    workspace.step = 3
    save_checkpoint(workspace, tmp_path / "ck")
    assert saved_step(tmp_path / "ck") == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


# -- metrics.jsonl ---------------------------------------------------------------------------------


def test_a_torn_last_metrics_line_is_skipped_and_repaired(tmp_path):
    path = tmp_path / "metrics.jsonl"
    append_jsonl(path, [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}])
    with open(path, "ab") as file:
        file.write(b'{"step": 3, "lo')  # the write a kill cut short
    assert [row["step"] for row in read_jsonl(path)] == [1, 2]
    repair_jsonl(path)
    append_jsonl(path, [{"step": 3, "loss": 1.0}])
    assert [row["step"] for row in read_jsonl(path)] == [1, 2, 3]
    path.write_text('{"step": 1}\nnot json\n{"step": 3}\n')
    with pytest.raises(UserError, match=r"metrics.jsonl:2: not a JSON object"):
        read_jsonl(path)


def test_a_reader_never_sees_half_a_row_while_rows_are_appended(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.touch()
    rows = [{"step": i, "text": "x" * (i * 37 % 5000)} for i in range(1, 400)]

    def write():
        for row in rows:
            append_jsonl(path, [row])

    writer = threading.Thread(target=write)
    writer.start()
    seen = 0
    while writer.is_alive() or seen < len(rows):
        steps = [row["step"] for row in read_jsonl(path)]
        assert steps == list(range(1, len(steps) + 1))
        seen = len(steps)
    writer.join()


def test_checkpoint_metrics_with_a_torn_last_line_still_load(tmp_path, tiny_workspace,
                                                             tiny_config):
    workspace = tiny_workspace("gpt")
    list(Trainer(workspace, tiny_config(steps=3)).run())
    folder = save_checkpoint(workspace, tmp_path / "ck")
    with open(folder / "metrics.jsonl", "ab") as file:
        file.write(b'{"step": 4, "loss"')
    assert [row["step"] for row in load_checkpoint(folder).history] == [1, 2, 3]


# -- explorer train: signals, faults --------------------------------------------------------------


def signal_at(monkeypatch, step, number):
    real = Autosave._step_done

    def step_done(self, done):
        real(self, done)
        if done == step:
            os.kill(os.getpid(), number)  # handled in this, the main, thread before the next step

    monkeypatch.setattr(Autosave, "_step_done", step_done)


def test_sigint_saves_the_step_it_stopped_at_and_exits_130(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "ck"
    signal_at(monkeypatch, 7, signal.SIGINT)
    before = signal.getsignal(signal.SIGINT)
    code = main(["train", *TINY_PAIRS, "--steps", "50", "--save-every", "5", "--out", str(folder),
                 *FAST])
    assert code == 130 and saved_step(folder) == 7
    assert "stopped by SIGINT: --resume" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before  # handlers put back
    workspace = load_checkpoint(folder)
    assert workspace.training_state is not None and len(workspace.history) == 7
    assert workspace.train_config.steps == 50  # the resumed run knows where to stop
    assert main(["train", "--resume", str(folder), *FAST]) == 0
    assert saved_step(folder) == 50


def test_periodic_saves_carry_the_training_config(tmp_path, monkeypatch):
    folder = tmp_path / "ck"
    seen = []
    real = Autosave.save

    def save(self):
        real(self)
        seen.append((saved_step(folder), load_checkpoint(folder).train_config.steps))

    monkeypatch.setattr(Autosave, "save", save)
    assert main(["train", *TINY_PAIRS, "--steps", "9", "--save-every", "4", "--out", str(folder),
                 *FAST]) == 0
    assert seen == [(4, 9), (8, 9)] and saved_step(folder) == 9


@pytest.mark.parametrize("fault", ["oom", "nan"])
def test_a_fault_names_the_checkpoint_that_survives(tmp_path, monkeypatch, capsys, fault):
    real = engine_module.compute_loss
    calls = {"n": 0}

    def faulty(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 12:
            if fault == "oom":
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8 GiB")
            output = real(*args, **kwargs)
            output.loss = output.loss * float("nan")
            return output
        return real(*args, **kwargs)

    monkeypatch.setattr(engine_module, "compute_loss", faulty)
    folder = tmp_path / "ck"
    code = main(["train", *TINY_PAIRS, "--steps", "50", "--save-every", "5", "--out", str(folder),
                 *FAST])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err
    assert ("out of memory" if fault == "oom" else "NaN") in err
    assert f"The checkpoint of step 10 in {folder} is intact." in err
    assert saved_step(folder) == 10 and load_checkpoint(folder).step == 10


@pytest.mark.parametrize("where", ["forward", "update"])
def test_oom_keeps_the_weights_of_the_last_finished_step(monkeypatch, tiny_workspace,
                                                         tiny_config, where):
    calls = {"n": 0}
    if where == "forward":
        real = engine_module.compute_loss

        def fake(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == 4:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory")
            return real(*args, **kwargs)

        monkeypatch.setattr(engine_module, "compute_loss", fake)
    workspace = tiny_workspace("gpt")
    trainer = Trainer(workspace, tiny_config(steps=10))
    if where == "update":  # half the parameters changed, then the optimizer ran out of memory
        original_prepare = trainer._prepare

        def prepare():
            original_prepare()
            real_step = trainer.optimizer.step

            def step(*args, **kwargs):
                calls["n"] += 1
                if calls["n"] == 4:
                    with torch.no_grad():
                        next(workspace.model.parameters()).add_(1.0)
                    raise torch.cuda.OutOfMemoryError("CUDA out of memory")
                return real_step(*args, **kwargs)

            trainer.optimizer.step = step

        trainer._prepare = prepare
    events = list(trainer.run())
    assert events[-1].reason == "oom" and workspace.step == 3
    assert (workspace.training_state is None) == (where == "update")
    clean = tiny_workspace("gpt")
    list(Trainer(clean, tiny_config(steps=3)).run())
    for kept, expected in zip(workspace.model.parameters(), clean.model.parameters()):
        assert torch.equal(kept, expected)


def test_data_deleted_or_changed_mid_training(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\n" * 30)
    folder = tmp_path / "ck"
    real = Autosave._step_done

    def step_done(self, step):
        real(self, step)
        if step == 4:
            corpus.unlink()  # the data is in memory: training goes on

    monkeypatch.setattr(Autosave, "_step_done", step_done)
    args = ["--arch", "gpt", "--context", "8", "--d-model", "16", "--heads", "2"]
    assert main(["train", "--data", str(corpus), *args, "--steps", "8", "--save-every", "3",
                 "--out", str(folder), *FAST]) == 0
    assert saved_step(folder) == 8
    monkeypatch.undo()
    capsys.readouterr()

    assert main(["train", "--resume", str(folder), "--steps", "10", *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read its training data" in err
    assert f"{corpus}: no such file" in err

    corpus.write_text("the cat sat on the mat\n" * 29 + "a dog sat on the log\n")
    assert main(["train", "--resume", str(folder), "--steps", "10", *FAST]) == 0
    assert f"data: warning: {corpus} changed since" in capsys.readouterr().err
    assert saved_step(folder) == 10
    assert main(["train", "--resume", str(folder), "--steps", "11", *FAST]) == 0
    assert "changed since" not in capsys.readouterr().err  # the new content is the recorded one


def test_metrics_are_appended_every_step_and_ignored_past_the_saved_step(tmp_path, monkeypatch):
    folder = tmp_path / "ck"
    rows_on_disk = {}
    real = Autosave._step_done

    def step_done(self, step):
        real(self, step)
        rows = read_jsonl(folder / "metrics.jsonl")  # the run's rows: steps, evaluations, events
        rows_on_disk[step] = [(row.get("event"), row["step"]) for row in rows]
        if step == 8:  # as if killed here: the folder holds step 5, its metrics run to step 8
            raise KeyboardInterrupt

    monkeypatch.setattr(Autosave, "_step_done", step_done)
    # no gathering of step rows (tests/runs/test_run_folder.py tests it): each one as it comes
    monkeypatch.setattr("explorer.runs.writer.ROWS_EVERY_S", 0.0)
    assert main(["train", *TINY_PAIRS, "--steps", "20", "--save-every", "5", "--eval-every", "3",
                 "--out", str(folder), *FAST[:-2]]) == 130
    steps = {step: [s for event, s in rows if event is None] for step, rows in rows_on_disk.items()}
    assert all(steps[step] == list(range(1, step + 1)) for step in range(1, 9))  # as they come
    assert ("eval", 3) in rows_on_disk[3] and ("eval", 6) in rows_on_disk[6]
    assert ("eval", 6) not in rows_on_disk[5]  # an evaluation's row comes whole, after its step
    rows = read_jsonl(folder / "metrics.jsonl")
    assert rows[-1]["event"] == "finished" and rows[-1]["reason"] == "interrupted"
    workspace = load_checkpoint(folder)
    assert workspace.step == 5 and [row["step"] for row in workspace.history] == [1, 2, 3, 4, 5]
    assert "val_loss" in workspace.history[2] and "val_loss" not in workspace.history[3]


def test_a_full_disk_at_a_periodic_save_warns_and_training_goes_on(tmp_path, monkeypatch,
                                                                   capsys):
    import explorer.training.checkpoint as checkpoint_module

    real = checkpoint_module.write_jsonl
    calls = {"n": 0}

    def full_once(path, rows):
        calls["n"] += 1
        if calls["n"] == 2:  # the save at step 6; the one at step 3 went through
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, rows)

    monkeypatch.setattr(checkpoint_module, "write_jsonl", full_once)
    folder = tmp_path / "ck"
    assert main(["train", *TINY_PAIRS, "--steps", "10", "--save-every", "3", "--out", str(folder),
                 *FAST]) == 0
    err = capsys.readouterr().err
    assert f"warning: {folder}: cannot save the checkpoint (the disk is full)" in err
    assert saved_step(folder) == 10 and load_checkpoint(folder).step == 10


def test_a_folder_that_is_not_a_checkpoint_is_refused_before_training(tmp_path, monkeypatch,
                                                                      capsys):
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "chapter1.tex").write_text("years of work")
    monkeypatch.setattr(Trainer, "run", lambda self: pytest.fail("trained anyway"))
    assert main(["train", *TINY_PAIRS, "--steps", "5", "--out", str(tmp_path / "thesis"),
                 *FAST]) == 2
    assert "exists and is not a checkpoint" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]
