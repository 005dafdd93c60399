"""What training in a child process would give the app (issue 22's in-app target): a measured
prototype of the design, not the app's code.

    python benchmarks/bench_training_process.py [--steps 600] [--rounds 4] [--shot window.png]

bench_gui's model and data, trained three ways in each round, in rotated order, each between two
headless runs (`bench_gui.headless_tokens_per_s`, 1 thread everywhere):

- `thread`: the app as it is (`bench_gui.app_run`: the trainer in the window's worker thread);
- `process`: the same Trainer, probe and 10-a-second batches, in a child process (spawn), sending
  each `WorkerBatch` through a pipe to the real main window, whose controller hands it to the panels
  as the worker's signal does (`Controller._on_batch`). The window is open, in the training state,
  every panel live; the child's tokens/s is timed as headless is (from the Trainer's start).
  Not modelled: the run folder's recording (the app's ~1%), the child's start-up (torch's import,
  ~3 s), and moving the weights back to the window.

Reported: each variant's tokens/s over the mean of the headless runs either side, per round, and
their medians; the GUI thread's CPU per 100 steps.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MAX_EMITS_PER_S = 4  # the app's training worker's rate (explorer/ui/training_worker.py; 10 before 2026-11-28)


def train_in_child(conn, steps: int) -> None:
    """The child: a Trainer with the app's probe, its events batched as the worker batches them."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_gui

    from explorer.analysis.probe import make_probe_fn
    from explorer.analysis.probe_input import ProbeInput, default_probe_input
    from explorer.events import EvalMetrics, ProbeSnapshot, StepMetrics
    from explorer.training.engine import Trainer
    from explorer.ui.training_worker import WorkerBatch

    bench_gui.THREADS[0] = 1
    workspace = bench_gui.make_workspace(steps)
    trainer = Trainer(workspace, workspace.train_config)
    trainer.probe_fn = make_probe_fn(workspace, ProbeInput(*default_probe_input(workspace)))
    pending, last_emit, tokens = WorkerBatch(), 0.0, 0
    started = time.perf_counter()
    for event in trainer.run():
        if isinstance(event, StepMetrics):
            pending.steps.append(event)
            tokens += event.tokens
        elif isinstance(event, EvalMetrics):
            pending.evals.append(event)
        elif isinstance(event, ProbeSnapshot):
            pending.probe = event
        now = time.perf_counter()
        if pending and now - last_emit >= 1.0 / MAX_EMITS_PER_S:
            conn.send(pending)
            pending, last_emit = WorkerBatch(), now
    elapsed = time.perf_counter() - started
    if pending:
        conn.send(pending)
    conn.send(("done", tokens / elapsed))
    conn.close()


SHOT: list[str | None] = [None]  # --shot: the window halfway through a `process` run


def process_run(steps: int) -> dict:
    import tempfile

    from PySide6.QtCore import QSettings, QSocketNotifier

    import bench_gui
    from explorer.ui.app import create_application
    from explorer.ui.main_window import MainWindow

    app = create_application()
    tmp = tempfile.mkdtemp(prefix="bench-process-")
    settings = QSettings(f"{tmp}/settings.ini", QSettings.Format.IniFormat)
    settings.setValue("runs/data_dir", tmp)
    window = MainWindow(settings=settings, load_demo=False)
    window.resize(1400, 900)
    window.show()
    window.controller.set_workspace(bench_gui.make_workspace(steps))
    while window.controller.jobs.busy:
        app.processEvents()
    parent_end, child_end = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("spawn").Process(target=train_in_child,
                                                         args=(child_end, steps))
    child.start()
    child_end.close()
    result: dict = {}
    window.controller.app_state.set_training("running", target_steps=steps)

    def deliver() -> None:
        while "tokens_per_s" not in result and parent_end.poll():
            message = parent_end.recv()
            if isinstance(message, tuple):  # ("done", tokens/s): the child has finished
                result["tokens_per_s"] = message[1]
                notifier.setEnabled(False)
                app.quit()
                return
            window.controller._on_batch(message)
            if SHOT[0] and message.steps and message.steps[-1].step >= steps // 2:
                window.grab().save(SHOT[0])
                SHOT[0] = None  # one picture

    notifier = QSocketNotifier(parent_end.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(deliver)
    gui_cpu = time.thread_time()
    app.exec()  # the child's start-up included: the window waits, nearly idle
    result["gui_cpu_ms_per_100_steps"] = 1000 * (time.thread_time() - gui_cpu) * 100 / steps
    child.join()
    window.controller.app_state.set_training("idle")
    window.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--shot", default=None,
                        help="save the window halfway through the first process run (PNG)")
    args = parser.parse_args()
    SHOT[0] = args.shot
    import bench_gui

    bench_gui.THREADS[0] = 1
    variants = {"thread": bench_gui.app_run, "process": process_run}
    names = list(variants)
    ratios: dict[str, list[float]] = {name: [] for name in names}
    gui_cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        order = names[round_ % 2:] + names[:round_ % 2]
        headless = [bench_gui.headless_tokens_per_s(args.steps)]
        for name in order:
            run = variants[name](args.steps)
            headless.append(bench_gui.headless_tokens_per_s(args.steps))
            ratios[name].append(run["tokens_per_s"] / ((headless[-2] + headless[-1]) / 2))
            gui_cpu[name].append(run["gui_cpu_ms_per_100_steps"])
        print(f"round {round_ + 1}: " + ", ".join(f"{n} {ratios[n][-1]:.3f}" for n in names)
              + f" (headless {', '.join(f'{h:,.0f}' for h in headless)} tokens/s, load "
              f"{os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    print(json.dumps({name: {"ratios": [round(r, 3) for r in ratios[name]],
                             "median_ratio": round(statistics.median(ratios[name]), 3),
                             "gui_cpu_ms_per_100_steps": round(statistics.median(gui_cpu[name]))}
                      for name in names}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
