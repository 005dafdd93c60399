"""`explorer train --save-every` killed for real: SIGKILL at random moments, SIGTERM, SIGINT.

Each kill must leave a folder that loads, whose step never goes back, whose metrics are complete up
to that step, and from which `--resume` goes on.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

from explorer.cli import main
from explorer.training import load_checkpoint

TRAIN = ["--threads", "1", "--device", "cpu", "--batch-size", "4", "--eval-every", "0"]
NEW_RUN = ["--task", "copy", "--arch", "seq2seq", "--hidden", "8", "--layers", "1"]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "explorer", "train", *args, *TRAIN],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def saved_step(folder) -> int:
    try:
        return json.loads((folder / "config.json").read_text())["step"]
    except (FileNotFoundError, ValueError):
        return -1


def wait_for_save_after(process, folder, step, timeout=60.0) -> None:
    """Poll (a subprocess cannot signal us) until the folder holds a step beyond `step`."""
    deadline = time.monotonic() + timeout
    while saved_step(folder) <= step:
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.02)


def check_folder(folder, seed) -> int:
    workspace = load_checkpoint(folder)
    assert workspace.training_state is not None, seed
    assert [row["step"] for row in workspace.history] == list(range(1, workspace.step + 1)), seed
    return workspace.step


def test_sigkill_at_random_moments_never_loses_the_last_checkpoint(tmp_path, capsys):
    seed = int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    folder = tmp_path / "ck"
    last = 0
    for round_ in range(3):
        args = (["--resume", str(folder)] if round_ else [*NEW_RUN, "--out", str(folder)])
        process = start(*args, "--steps", "1000000", "--save-every", "2")
        wait_for_save_after(process, folder, last)
        time.sleep(rng.uniform(0.0, 0.4))  # a random moment: often in the middle of a save
        process.kill()
        process.wait()
        step = check_folder(folder, seed)
        assert step >= max(last, 1), (seed, round_, step, last)  # never backwards
        last = step

    # then SIGTERM: the run saves where it stopped (not at its last multiple of 50) and exits 143
    process = start("--resume", str(folder), "--steps", "1000000", "--save-every", "50")
    # a kill in mid-save can leave config.json a step ahead of the checkpoint that opens (the
    # loader falls back to the last whole one), so wait for a save beyond what is on disk: only
    # then is the run's handler surely installed (it once got SIGTERM while importing, and died)
    wait_for_save_after(process, folder, max(last, saved_step(folder)))
    # and for one more: the first step seen beyond may still be the resume opening the folder,
    # before training starts and the handler is in place (it got SIGTERM there once, exit -15)
    wait_for_save_after(process, folder, saved_step(folder))
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=60)
    err = process.stderr.read().decode()
    assert code == 128 + signal.SIGTERM, (code, err[-3000:])
    assert "stopped by SIGTERM: --resume" in err and "Traceback" not in err
    step = int(err.rsplit("continues from step ", 1)[1].split()[0])
    assert step > last and saved_step(folder) == step and check_folder(folder, seed) == step

    # after the kills (each leaving a stale lock file) a plain resume finishes the run
    assert main(["train", "--resume", str(folder), "--steps", str(step + 3), *TRAIN]) == 0
    assert check_folder(folder, seed) == step + 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no lock, no staging debris
