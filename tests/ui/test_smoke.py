"""`explorer gui --smoke` end to end in a child process: the app as a user starts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from explorer.ui.panels import panel_ids


def test_smoke_run_draws_and_exports_every_panel_without_qt_warnings():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)  # the command itself must choose offscreen without a display
    # no sub-command: `explorer` alone runs the gui, so this also covers the default
    result = subprocess.run([sys.executable, "-m", "explorer", "--smoke"], capture_output=True,
                            text=True, timeout=300, env=env)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout + result.stderr[-3000:]
    report = json.loads(lines[0])
    assert result.returncode == 0, report
    assert report["errors"] == [] and report["qt_warnings"] == []
    assert report["panels"] == panel_ids()
    assert report["trained_steps"] == 20
    assert 0 < report["first_paint_s"] <= report["ready_s"]
    exported = report["exported"]
    for panel_id in panel_ids():
        assert any(os.path.basename(f).startswith(f"{panel_id}_") for f in exported), panel_id
    assert any(f.endswith(".png") for f in exported) and any(f.endswith(".csv") for f in exported)
    assert not any(os.sep in f for f in exported)  # names: the folder was temporary, now gone
