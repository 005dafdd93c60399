"""The README runs top to bottom, as a newcomer pastes it: every ```bash block in order in one
fresh temporary folder, then every ```python block in order in one interpreter in that folder, so
the README cannot drift from what the commands do.

Documented substitutions (the README says so above its first example), to keep this offline and
within a few minutes:
* `--steps N` becomes `--steps round(√N)` (at least 2: 300 -> 17, 30 -> 5, 40 -> 6), and
  `--time-limit M` becomes `--time-limit 0.05 --steps 10`;
* `curl` is a shell function that writes a stand-in of the file it would download: `input.txt`
  is plain text (this README's lines), Multi30k's `*.de.gz` / `*.en.gz` are gzip'd line-aligned
  pairs of the built-in translate-toy task;
* `explorer` is `python -m explorer` of this checkout, and the folder holds a copy of its
  `models/` (the README's commands run from the clone's root);
* in the Python blocks `explorer.show(...)` opens its window, waits until the model is in, and
  closes it (a script's call would block until a person closes the window).
A block after `<!-- readme-test: skip (why) -->` is not run (installs, downloaded HF models, GPUs).
A quoted JSON output (`# {...}` under a command) must match what it printed, `...` standing for
numbers that depend on the training.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"(?P<skip><!-- readme-test: skip \((?P<why>[^\n]*)\) -->\n)?```(?P<lang>bash|python)\n"
                   r"(?P<body>.*?)```", re.S)

STAND_IN = r'''
import gzip, sys
from pathlib import Path
args = sys.argv[1:]
url = next(a for a in args if a.startswith("http"))
out = Path(args[args.index("-o") + 1]) if "-o" in args else Path(url.rsplit("/", 1)[1])
if out.name == "input.txt":
    lines = [l for l in Path(sys.argv[0]).with_name("README.md").read_text().splitlines() if l.strip()]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
else:
    from explorer.data.tasks import make_task
    splits = make_task("translate-toy", seed=0, n_train=300, n_val=30)
    pairs = splits.val if out.name.startswith("val") else splits.train
    side = 0 if ".de" in out.name else 1
    out.write_bytes(gzip.compress(("\n".join(p[side] for p in pairs) + "\n").encode()))
'''


SHOW_THEN_CLOSE = r'''
import explorer as _explorer
from explorer.ui.show_window import show as _show


def _show_then_close(*args, **kwargs):
    from PySide6.QtCore import QCoreApplication, QElapsedTimer

    window = _show(*args, block=False, **kwargs)
    clock = QElapsedTimer()
    clock.start()
    while not window.panels and clock.elapsed() < 120_000:
        QCoreApplication.processEvents()
    assert window.panels, "explorer.show: the window never started up"
    window.close()
    return window


_explorer.show = _show_then_close
'''


def blocks(lang: str) -> list[str]:
    return [m["body"] for m in BLOCK.finditer(README.read_text(encoding="utf-8"))
            if m["lang"] == lang and not m["skip"]]


def substituted(block: str) -> str:
    block = re.sub(r"--steps (\d+)",
                   lambda m: f"--steps {max(2, round(math.sqrt(int(m[1]))))}", block)
    return re.sub(r"--time-limit \S+", "--time-limit 0.05 --steps 10", block)


def quoted_outputs(block: str) -> list[tuple[str, dict]]:
    """(the command's name, the JSON quoted under it) for each `# {...}` line after a command."""
    found, command = [], None
    for line in block.splitlines():
        if line.startswith("# {") and command is not None:  # right under the command
            text = line[2:].replace("[...]", "null").replace("...", "null")
            found.append((command, json.loads(text)))
        command = line.split()[1] if line.startswith("explorer ") else None
    return found


def one_line_json(stdout: str) -> list:
    """The lines of `stdout` that are whole JSON objects (a command's --json output)."""
    found = []
    for line in stdout.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def check_quoted(block: str, stdout: str) -> None:
    printed = one_line_json(stdout)
    for command, quoted in quoted_outputs(block):
        match = [p for p in printed if isinstance(p, dict) and set(p) == set(quoted)]
        assert match, f"{command}: nothing printed has the keys of {quoted}"
        for key, value in quoted.items():
            if value is not None:
                assert match[0][key] == value, (command, key, match[0][key])


@pytest.mark.slow
def test_the_readme_runs_top_to_bottom(tmp_path):
    folder = tmp_path / "fresh"
    folder.mkdir()
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "stand_in.py").write_text(STAND_IN, encoding="utf-8")
    (tools / "README.md").write_text(README.read_text(encoding="utf-8"), encoding="utf-8")
    prelude = (f'explorer() {{ "{sys.executable}" -m explorer "$@"; }}\n'
               f'curl() {{ "{sys.executable}" "{tools / "stand_in.py"}" "$@"; }}\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    shutil.copytree(ROOT / "models", folder / "models")  # the example models, as in the clone
    shell = blocks("bash")
    assert len(shell) >= 2 and any("explorer train --task reverse" in b for b in shell)
    for block in shell:
        run = subprocess.run(["bash", "-euo", "pipefail", "-c", prelude + substituted(block)],
                             cwd=folder, env=env, capture_output=True, text=True, timeout=900)
        assert run.returncode == 0, f"{block}\n--- stderr:\n{run.stderr[-3000:]}"
        check_quoted(block, run.stdout)
    script = SHOW_THEN_CLOSE + "\n".join(blocks("python"))
    run = subprocess.run([sys.executable, "-c", script], cwd=folder, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    # the examples write what the README says they write
    for path in ("runs/gru", "runs/reverse", "runs/brackets", "runs/shakespeare", "runs/dates",
                 "runs/dates-again", "runs/multi30k", "hyp.txt", "figures"):
        assert (folder / path).exists(), path


def test_the_substitutions_are_the_documented_ones():
    assert substituted("--steps 300 --steps 30 --steps 40 --steps 1") == \
        "--steps 17 --steps 5 --steps 6 --steps 2"
    assert substituted("--time-limit 10 --out x") == "--time-limit 0.05 --steps 10 --out x"
    assert quoted_outputs('explorer score --json\n# {"a": [...], "b": ..., "c": [1]}\n'
                          '# an example config:\n# {"task": "dates"}\n') == [
        ("score", {"a": None, "b": None, "c": [1]})]
