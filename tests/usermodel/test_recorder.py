"""explorer.Recorder: a plain training loop recorded into a run folder that the app's readers open."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

import explorer
from explorer.errors import UserError
from explorer.runs.follow import RunFollower
from explorer.runs.reader import RunReader
from explorer.training.checkpoint import load_checkpoint
from explorer.usermodel.loader import allow

HERE = Path(__file__).parent
BUILD = f"{HERE / 'homework_seq2seq.py'}:build"
REPO = HERE.parents[1]

LOOP = textwrap.dedent("""
    import sys, time, torch
    import explorer
    from explorer.usermodel.loader import call_build

    folder, build, ready = sys.argv[1], sys.argv[2], sys.argv[3]
    model, vocab, _ = call_build(build)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    src = torch.randint(4, 12, (4, 5))
    with explorer.Recorder(folder, model=model, tokenizer=vocab, snapshot_every=5,
                           build=build, args={}) as record:
        for step in range(1, 100000):
            logits = model(src, src)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), src.flatten())
            optimizer.zero_grad(); loss.backward(); optimizer.step()
            record.step(step, loss=loss, lr=0.1)
            if step == 12:
                open(ready, "w").close()
""")


def _loop_process(folder: Path, tmp_path: Path) -> subprocess.Popen:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    process = subprocess.Popen([sys.executable, str(script), str(folder), BUILD, str(ready)],
                               env=env)
    return process, ready


def _wait_for(path: Path, process, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert process.poll() is None, "the training loop died"
        assert time.monotonic() < deadline, "the training loop never got going"
        time.sleep(0.05)


def test_sigkill_mid_run_leaves_a_folder_that_opens_and_never_goes_back(tmp_path):
    folder = tmp_path / "runs" / "mine"
    process, ready = _loop_process(folder, tmp_path)
    _wait_for(ready, process)
    opened_steps = []
    allow(BUILD)
    # read it while it is written: the step only moves forward. Snapshots are written in the
    # background, so wait until the step-10 one is on disk before the kill.
    deadline = time.monotonic() + 120
    while not opened_steps or opened_steps[-1] < 10:
        assert time.monotonic() < deadline, f"the checkpoint stayed at {opened_steps[-1:]}"
        opened_steps.append(load_checkpoint(folder, load_state=False).step)
    process.send_signal(signal.SIGKILL)
    process.wait()

    reader = RunReader(folder)
    rows = reader.read_new()
    steps = [r["step"] for r in rows if "event" not in r]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) >= 12
    assert all(row["loss"] > 0 for row in rows if "event" not in row)
    workspace = load_checkpoint(folder, load_state=False)
    opened_steps.append(workspace.step)
    assert opened_steps == sorted(opened_steps)  # never goes back
    snapshots = reader.snapshots()
    assert snapshots and snapshots[-1].step <= steps[-1]
    assert workspace.step >= 10  # the checkpoint follows the snapshots (every 5 steps)
    assert workspace.history[-1]["step"] == workspace.step
    assert RunFollower(folder).poll() is not None
    # every snapshot opens, with the weights the loop had at that step
    first, last = reader.open_snapshot(snapshots[0].step), reader.open_snapshot(snapshots[-1].step)
    assert first.step == snapshots[0].step and last.step == snapshots[-1].step
    changed = [not torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                     last.model.state_dict().values())]
    assert any(changed)
    # a new Recorder on the folder takes over the dead writer's lock and continues it
    model, vocab = first.model.inner, ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh")
    with explorer.Recorder(folder, model=model, tokenizer=vocab, build=BUILD, args={},
                           resume=True) as record:
        with pytest.raises(UserError, match="steps must increase"):
            record.step(steps[-1], loss=1.0)
        record.step(steps[-1] + 1, loss=1.0)


def test_recorder_writes_a_run_the_reader_and_the_checkpoint_loader_open(tmp_path):
    from tests.usermodel.homework_seq2seq import VOCAB, Homework

    torch.manual_seed(0)
    model = Homework()
    folder = tmp_path / "run"
    losses = []
    with explorer.Recorder(folder, model=model, tokenizer=VOCAB, snapshot_every=4,
                           build=BUILD, args={}, hparams={"lr": 0.05}) as record:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
        src = torch.randint(4, 12, (8, 6))
        record.eval(0, val_loss=3.0)
        for step in range(1, 11):
            loss = torch.nn.functional.cross_entropy(model(src, src).flatten(0, 1), src.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            record.step(step, loss=loss, lr=0.05, grad_norm=1.5)
        record.eval(10, val_loss=losses[-1], bleu=12.5)
        with pytest.raises(UserError, match="before step 11"):
            record.eval(11, val_loss=1.0)
    reader = RunReader(folder)
    reader.read_new()
    curves = reader.curves()
    assert curves.train["loss"].tolist() == pytest.approx(losses)
    assert curves.eval["bleu"][-1] == 12.5
    assert [s.step for s in reader.snapshots()] == [0, 4, 8, 10]
    assert reader.finished["reason"] == "done"
    config = json.loads((folder / "config.json").read_text())
    assert config["model"]["build"] == BUILD and config["run"]["build"]["hparams"] == {"lr": 0.05}
    workspace = load_checkpoint(folder)
    for key, value in model.state_dict().items():
        assert torch.equal(workspace.model.state_dict()[key], value)
    assert not (tmp_path / ".run.lock").exists() or True  # the lock file may stay; it is free
    from explorer.durable import FolderLock

    FolderLock(folder).acquire().release()  # nobody holds it any more


def test_a_run_of_unnamed_code_opens_its_curves_but_asks_for_the_code(tmp_path):
    from explorer.usermodel.loader import _NAMED

    script = tmp_path / "secret_model.py"
    script.write_text((HERE / "homework_seq2seq.py").read_text())
    build = f"{script}:build"
    process = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import explorer
            from explorer.usermodel.loader import call_build
            model, vocab, _ = call_build({build!r})
            with explorer.Recorder({str(tmp_path / 'run')!r}, model=model, tokenizer=vocab,
                                   build={build!r}, args={{}}) as record:
                record.step(1, loss=2.0)
        """)], env={**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr
    assert RunReader(tmp_path / "run").read_new()
    _NAMED.discard(build)
    with pytest.raises(UserError, match="built by your code .*--model FILE.py:build"):
        load_checkpoint(tmp_path / "run")
