"""Opening a long run in the app (issue 14: "opening a run of 100,000 steps and 50 snapshots shows
its curves in < 1 s"): File ▸ Open on the run folder, until the curves panel holds every recorded
step and has painted them. The run is bench_run_read.py's (real checkpoints, RunWriter's rows).

    python benchmarks/bench_run_open_app.py [--steps 100000] [--snapshots 50] [--repeats 3]

Each repeat opens the run in a fresh window (offscreen), once that window has drawn itself (2 s
of events first). Reported: the wall-clock time from `open_path` to the painted curves (the
target), and to the latest checkpoint loaded with the timeline listing the snapshots (the run's
rows are read and drawn first, the model after), per repeat, and the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_run_read import make_run  # noqa: E402


def open_once(app, folder: Path, steps: int, settings_dir: str) -> float:
    from PySide6.QtCore import QSettings

    from explorer.ui.main_window import MainWindow

    window = MainWindow(settings=QSettings(f"{settings_dir}/settings.ini", QSettings.Format.IniFormat),
                        load_demo=False)
    window.show()
    window.create_panels()
    settle = time.perf_counter() + 2.0  # the empty window's first draws are not the run's
    while time.perf_counter() < settle:
        app.processEvents()
        time.sleep(0.005)
    curves = window.panels["curves"]
    started = time.perf_counter()
    window.open_path(folder)
    deadline = started + 60
    while time.perf_counter() < deadline and len(curves.train.view()) < steps:
        app.processEvents()
        time.sleep(0.002)
    curves.repaint()  # the curves drawn, not just held
    app.processEvents()
    elapsed = time.perf_counter() - started
    assert len(curves.train.view()) == steps, len(curves.train.view())
    while time.perf_counter() < deadline and not (window.runs.timeline.steps
                                                  and not window.controller.jobs.busy):
        app.processEvents()
        time.sleep(0.002)
    ready = time.perf_counter() - started  # the model loaded, the timeline listing the snapshots
    assert window.runs.timeline.steps, "the timeline lists the snapshots"
    window.close()
    window.deleteLater()
    app.processEvents()
    return elapsed, ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from explorer.ui.app import create_application

    app = create_application([])
    with tempfile.TemporaryDirectory(prefix="bench-run-open-") as tmp:
        folder = Path(tmp) / "run"
        make_run(folder, args.steps, args.snapshots)
        results = [open_once(app, folder, args.steps, tmp) for _ in range(args.repeats)]
    load = os.getloadavg()[0]
    times, ready = [r[0] for r in results], [r[1] for r in results]
    median = statistics.median(times)
    print(f"| {args.steps:,} steps, {args.snapshots} snapshots, in the app | curves painted: median "
          f"{median:.3f} s (runs: {' '.join(f'{t:.3f}' for t in times)}) | model and timeline "
          f"ready: median {statistics.median(ready):.3f} s | load average {load:.2f} |")
    print(("PASS" if median < 1 else "FAIL") + ": the curves painted in < 1 s of wall-clock time")


if __name__ == "__main__":
    main()
