"""`explorer gui` without a display, and the self-test on a checkpoint that does not load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "resources" / "demo" / "dates-gru-additive"


def headless_env(**extra) -> dict:
    """The environment of an ssh session: no X11 or Wayland display, no Qt platform chosen."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    return {**env, **extra}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="displays are an X11/Wayland matter")
@pytest.mark.parametrize("argv", [[], ["gui"]])
def test_no_display_says_so_in_one_line_and_exits_2(argv):
    result = subprocess.run([sys.executable, "-m", "explorer", *argv], capture_output=True,
                            text=True, timeout=60, env=headless_env())
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("explorer gui: error: no display") and "--smoke" in line


def test_smoke_on_a_corrupt_checkpoint_exits_2_at_once(tmp_path):
    checkpoint = tmp_path / "broken"
    shutil.copytree(DEMO, checkpoint)
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:300])  # cut short, as an interrupted copy leaves it
    # well inside the self-test's own 240 s timeout, which it used to wait out
    result = subprocess.run([sys.executable, "-m", "explorer", "gui", "--smoke", "--checkpoint",
                             str(checkpoint)], capture_output=True, text=True, timeout=120,
                            env=headless_env())
    assert result.returncode == 2, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["trained_steps"] == 0 and report["exported"] == []
    (error,) = report["errors"]
    # one line naming the file: the weights' header is checked against the file's length
    assert str(checkpoint) in error and ("truncated or corrupt" in error or "cannot load" in error)


def test_gui_and_decode_word_a_missing_checkpoint_alike(tmp_path, capsys):
    from explorer.cli import main

    for folder, says in ((tmp_path / "nonexistent", "no such checkpoint folder"),
                         (tmp_path, "not a checkpoint (no config.json)")):
        errors = []
        for command in (["gui", "--checkpoint", str(folder)],
                        ["decode", "--checkpoint", str(folder), "hi"]):
            assert main(command) == 2
            errors.append(capsys.readouterr().err.split(": error: ", 1)[1])
        assert errors[0] == errors[1] == f"{folder}: {says}\n"


def unused_x_display() -> str:
    """A local DISPLAY no X server answers at."""
    number = 97
    while Path(f"/tmp/.X11-unix/X{number}").exists():
        number += 1
    return f":{number}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="displays are an X11/Wayland matter")
def test_a_display_that_does_not_answer_is_no_display_in_one_line_exit_2():
    """A stale DISPLAY (an ssh session's, an Xvfb gone) made Qt abort (exit 134) with a page of
    plugin advice."""
    display = unused_x_display()
    result = subprocess.run([sys.executable, "-m", "explorer"], capture_output=True, text=True,
                            timeout=60, env=headless_env(DISPLAY=display))
    assert result.returncode == 2, result.stderr[-2000:]
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"explorer gui: error: no display: DISPLAY={display} does not answer")
    assert "--smoke" in line
