"""The README's first lines are what a newcomer pastes: the set-up commands, with the CPU-wheel
note before them, and the test command CI runs verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_opens_with_the_two_commands_after_the_cpu_note_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [(m.start(), m.group(1).strip()) for m in re.finditer(r"```bash\n(.*?)```", readme, re.S)]
    (install_at, install), (test_at, test) = blocks[:2]
    assert install == "pip install -e . && explorer"
    assert test == 'pip install -e ".[test]" && pytest -n auto'
    note_at = readme.find("pip install torch==2.13.0")
    assert 0 < note_at < install_at  # read before anything is pasted
    assert "## " not in readme[:test_at]  # nothing but the set-up comes first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test in ci.splitlines()
    assert "torch==2.13.0" in ci.split(test)[0]  # the CPU wheel goes in first
    # on the public index the CPU wheel needs PyTorch's own index; the note must say so
    assert "--index-url https://download.pytorch.org/whl/cpu" in readme[:install_at]
    # a fresh venv, so the ranges resolve to the newest releases as a newcomer's install does
    assert "python3 -m venv" in ci.split(test)[0] and "--system-site-packages" not in ci
