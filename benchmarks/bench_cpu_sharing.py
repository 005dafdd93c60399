"""What sharing the CPU costs training, apart from anything the app does (issue 22's in-app target).

    python benchmarks/bench_cpu_sharing.py [--steps 400] [--rounds 3] [--duties 0 0.1 0.2 1]

Two ceilings on "training in the app at >= 0.95 of headless":

1. The GIL while Qt paints. A Python thread counts in a loop while the main thread paints a
   path with QPainter (PySide6), as pyqtgraph's items do in every paint. Reported: the counting
   thread's rate during the paint over its rate while the main thread sleeps. Near 0 means the
   painting thread holds the GIL throughout its C++ call, so a training thread in the same
   process cannot run Python (between its torch ops) while a panel paints.
2. The other core. bench_gui's headless training (1 thread) alone and beside a *separate process*
   that is busy `duty` of every 10 ms (numpy and Python, then sleeping): no GIL is shared, so the
   slowdown is the machine's (two vCPUs that share a physical core, caches or memory bandwidth).
   Each duty is run once per round, in rotated order; reported: median tokens/s per duty and its
   ratio to the median alone.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import statistics
import sys
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def gil_during_paint(points: int = 2_000, paints: int = 10) -> dict:
    from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter, QPainterPath, QPen

    app = QGuiApplication.instance() or QGuiApplication(sys.argv)  # noqa: F841 - QPainter needs it
    image = QImage(1500, 1000, QImage.Format.Format_ARGB32_Premultiplied)
    path = QPainterPath()
    path.moveTo(0, 500)
    for i in range(points):  # a noisy loss curve's worth of segments
        path.lineTo(i * 1500 / points, 500 + 400 * math.sin(i / 50))
    count, stop = [0], threading.Event()

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    def paint() -> None:
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)  # the app's setting
        painter.setPen(QPen(QColor(0, 0, 0), 1.5))
        for _ in range(paints):
            painter.drawPath(path)
        painter.end()

    started = time.perf_counter()
    paint()
    paint_s = time.perf_counter() - started
    spinner = threading.Thread(target=spin)
    spinner.start()
    time.sleep(0.2)
    before, started = count[0], time.perf_counter()
    time.sleep(paint_s)
    rate_idle = (count[0] - before) / (time.perf_counter() - started)
    before, started = count[0], time.perf_counter()
    paint()
    rate_painting = (count[0] - before) / (time.perf_counter() - started)
    stop.set()
    spinner.join()
    return {"paint_s": round(paint_s, 3), "python_thread_rate_idle": round(rate_idle),
            "python_thread_rate_while_painting": round(rate_painting),
            "ratio": round(rate_painting / rate_idle, 4)}


def busy(duty: float, stop) -> None:
    import numpy as np

    a = np.random.default_rng(0).random((256, 256), dtype=np.float32)
    while not stop.is_set():
        started = time.perf_counter()
        while time.perf_counter() - started < 0.010 * duty:
            a @ a
            sum(range(200))
        time.sleep(0.010 * (1 - duty))


def beside_neighbour(steps: int, rounds: int, duties: list[float]) -> dict:
    import bench_gui

    bench_gui.THREADS[0] = 1
    context = multiprocessing.get_context("spawn")
    runs: dict[float, list[float]] = {duty: [] for duty in duties}
    for round_ in range(rounds):
        shift = round_ % len(duties)
        for duty in duties[shift:] + duties[:shift]:
            stop, neighbour = context.Event(), None
            if duty > 0:
                neighbour = context.Process(target=busy, args=(duty, stop))
                neighbour.start()
                time.sleep(1.0)  # its start-up (imports) is not part of the measurement
            runs[duty].append(bench_gui.headless_tokens_per_s(steps))
            if neighbour is not None:
                stop.set()
                neighbour.join()
        done = ", ".join(f"duty {d}: {r[-1]:,.0f}" for d, r in runs.items())
        print(f"round {round_ + 1}: {done} tokens/s (load {os.getloadavg()[0]:.1f})",
              file=sys.stderr, flush=True)
    alone = statistics.median(runs[duties[0]])
    return {str(duty): {"tokens_per_s": [round(r) for r in runs[duty]],
                        "median": round(statistics.median(runs[duty])),
                        "ratio_to_first": round(statistics.median(runs[duty]) / alone, 3)}
            for duty in duties}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duties", type=float, nargs="+", default=[0.0, 0.1, 0.2, 1.0],
                        help="the neighbour's busy shares; the first is the reference (0: none)")
    args = parser.parse_args()
    report = {"gil_during_paint": gil_during_paint(),
              "beside_a_busy_process": beside_neighbour(args.steps, args.rounds, args.duties),
              "load_average": os.getloadavg()[0]}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
