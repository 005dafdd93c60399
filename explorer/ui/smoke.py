"""`explorer gui --smoke`: the whole app, end to end, unattended.

Start, open the demo (or a given checkpoint), train 20 steps in the worker, wait for every panel
to draw, export every panel, close, and print one JSON object. Exit 0 only if every panel has real
content and Qt logged no warning.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

SMOKE_STEPS = 20
TIMEOUT_S = 240.0

_IMPORTED_AT = time.monotonic()


def process_age_s() -> float:
    """Seconds since this process started (Linux: from /proc; elsewhere since this import)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started_ticks = int(fields[19])  # field 22 of stat; fields after ")" start at field 3
        with open("/proc/uptime") as f:
            uptime_s = float(f.read().split()[0])
        return uptime_s - started_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED_AT


class SmokeRun:
    """Drives a MainWindow through the smoke sequence with signals and timers, never blocking."""

    def __init__(self, app, window, log, export_dir: Path) -> None:
        from PySide6.QtCore import QTimer

        self.app, self.window, self.log = app, window, log
        self.export_dir = export_dir
        self.report = {"first_paint_s": None, "ready_s": None, "trained_steps": 0, "panels": [],
                       "not_applicable": [],
                       "exported": [], "errors": [], "qt_warnings": []}
        self.phase = "starting"
        self.trained = False
        self.load_failed = False
        self.finished = False
        window.first_painted.connect(self._on_first_paint)
        window.error_shown.connect(self._on_error)
        window.bus.workspace_changed.connect(self._on_workspace)
        window.controller.training_finished.connect(self._on_trained)
        window.bus.step_metrics.connect(self._on_steps)
        self.poll = QTimer()
        self.poll.setInterval(100)
        self.poll.timeout.connect(self._tick)
        self.deadline = time.monotonic() + TIMEOUT_S

    def _mark(self, key: str) -> None:
        if self.report[key] is None:
            self.report[key] = round(process_age_s(), 3)

    def _on_first_paint(self, _) -> None:
        self._mark("first_paint_s")
        self.poll.start()

    def _on_error(self, message: str) -> None:
        self.report["errors"].append(message)
        if self.phase == "starting":  # the checkpoint did not load: nothing to wait for
            self.load_failed = True
            self._finish()

    def _on_workspace(self, workspace) -> None:
        if workspace is not None and self.phase == "starting":
            self.phase = "loaded"

    def _on_steps(self, steps) -> None:
        self.report["trained_steps"] += len(steps)

    def _on_trained(self, finished) -> None:
        self.trained = True
        if finished.reason not in ("done", "stopped"):
            message = f"training ended with {finished.reason}: {finished.message}"
            self.report["errors"].append(message)

    def _tick(self) -> None:
        controller = self.window.controller
        if time.monotonic() > self.deadline:
            missing = [p for p, panel in self.window.panels.items() if not panel.has_content()]
            self.report["errors"].append(f"timed out in phase {self.phase}; empty: {missing}")
            self._finish()
        elif self.phase == "loaded" and not controller.jobs.busy:  # the first look has landed
            self._mark("ready_s")
            self.phase = "training"
            controller.train(steps=SMOKE_STEPS)
        elif self.phase == "training" and self.trained and not controller.jobs.busy:
            self.phase = "drawing"
        elif self.phase == "drawing":
            for panel in self.expected_panels():  # out of sight, panels hold their draws
                if not panel.has_content():
                    panel.flush_pending_draws()
            if all(p.has_content() for p in self.expected_panels()):
                self._finish()

    def expected_panels(self) -> list:
        """The panels that can draw this model (a language model has no BLEU, for instance)."""
        workspace = self.window.bus.workspace
        return [panel for panel in self.window.panels.values() if panel.applies_to(workspace)]

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        self.poll.stop()
        panels = self.window.panels
        self.report["panels"] = [p for p, panel in panels.items() if panel.has_content()]
        self.report["not_applicable"] = [
            p for p, panel in panels.items() if panel not in self.expected_panels()]
        for panel_id, reason in self.window.missing_panels.items():
            self.report["errors"].append(f"panel {panel_id} missing: {reason}")
        if self.phase == "drawing":
            self.report["exported"] = [
                str(path) for path in self.window.export_panels(list(panels), str(self.export_dir))
            ]
        self.window.close()
        self.app.quit()


def run_smoke(checkpoint: str | None = None) -> int:
    from PySide6.QtCore import QSettings

    from explorer.ui.app import QtMessageLog, create_application

    app = create_application()
    log = QtMessageLog()
    log.install()
    from explorer.ui.main_window import MainWindow

    with tempfile.TemporaryDirectory(prefix="explorer-smoke-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        settings.setValue("runs/data_dir", str(Path(tmp) / "data"))  # no user data, no recovery
        export_dir = Path(tmp) / "export"
        export_dir.mkdir()
        window = MainWindow(settings=settings, checkpoint=checkpoint, load_demo=checkpoint is None)
        run = SmokeRun(app, window, log, export_dir)
        window.show()
        app.exec()
        window.controller.shutdown()
        log.uninstall()
        report = run.report
        # names only: the folder they were written to and checked in is deleted with `tmp`
        report["exported"] = sorted(Path(p).name for p in report["exported"])
        report["exported_to"] = "a temporary folder, deleted after the check"
        report["qt_warnings"] = list(log.warnings)
    from explorer.ui.panels import panel_ids

    all_drawn = set(report["panels"]) | set(report["not_applicable"]) == set(panel_ids())
    ok = all_drawn and not report["qt_warnings"] and not report["errors"] and report["exported"]
    print(json.dumps(report, indent=None))
    sys.stdout.flush()
    if run.load_failed:
        return 2  # bad input, as every command reports it
    return 0 if ok else 1

