"""Training curves at 100,000 steps: what one live update (10 new steps, a redraw and a paint of
the curves panel) costs once the run is long: under 0.25 s (the bound tests/ui/test_curves_bleu.py
used to time; the test now checks the behaviour behind it, peak downsampling and clip-to-view).

    python benchmarks/bench_curves.py [--steps 100000] [--updates 30]

Reported: the median and the slowest update, at full view and zoomed in on 100 steps.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def steps(start: int, count: int):
    from explorer.events import StepMetrics

    return [StepMetrics(s, 4.0 / math.sqrt(s), 1e-3, 3.0 / s**0.25, min(3.0 / s**0.25, 1.0), 100,
                        5e4, s * 0.01) for s in range(start, start + count)]


def main() -> None:
    parser = argparse.ArgumentParser(description="live curve updates of a long run")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=30)
    args = parser.parse_args()
    from PySide6.QtWidgets import QApplication

    from explorer.ui.bus import AppBus
    from explorer.ui.panels.curves import TrainingCurvesPanel

    app = QApplication.instance() or QApplication([])
    bus = AppBus()
    panel = TrainingCurvesPanel(bus)
    panel.resize(900, 500)
    panel.show()
    for start in range(1, args.steps + 1, 10_000):
        bus.step_metrics.emit(steps(start, min(10_000, args.steps + 1 - start)))
    app.processEvents()

    def updates(first: int) -> list[float]:
        times = []
        for k in range(args.updates):
            started = time.perf_counter()
            bus.step_metrics.emit(steps(first + 10 * k, 10))
            panel.redraw()
            panel.view.viewport().repaint()
            times.append(time.perf_counter() - started)
        return times

    full = updates(args.steps + 1)
    for plot in panel.plots.values():
        plot.setXRange(args.steps // 2, args.steps // 2 + 100, padding=0)
    zoomed = updates(args.steps + 1 + 10 * args.updates)
    for name, times in (("full view", full), ("zoomed on 100 steps", zoomed)):
        print(f"| {args.steps:,} steps, {name} | median {1000 * statistics.median(times):.1f} ms, "
              f"slowest {1000 * max(times):.1f} ms ({args.updates} updates) |")
    panel.close()


if __name__ == "__main__":
    main()
