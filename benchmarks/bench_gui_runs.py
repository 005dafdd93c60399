"""What recording the run costs a training in the app (issue 14: every GUI training writes a run folder).

    python benchmarks/bench_gui_runs.py [--steps 600] [--rounds 3] [--autosave-minutes 0.1]

Trains bench_gui's model in the real main window (offscreen, every panel live), with the run
recorded (metrics rows, a snapshot every 100 steps, an autosave every --autosave-minutes, the
checkpoints at the start and the end; TensorBoard off, the app's default) and without (no
RunKeeper), alternating, and reports:

- the time the training thread spent inside the recorder, as a share of the training's wall time
  (the figure this noisy 2-core machine can resolve);
- the tokens/s ratio recorded / not recorded, the median of paired rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def timed(cls, names, spent: dict) -> None:
    """Add the wall time of every call of cls.<name> to spent[name]."""
    for name in names:
        original = getattr(cls, name)

        def wrapper(self, *args, _original=original, _name=name, **kwargs):
            started = time.perf_counter()
            try:
                return _original(self, *args, **kwargs)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - started

        setattr(cls, name, wrapper)


def app_run(steps: int, record: bool, autosave_minutes: float, spent: dict) -> dict:
    from PySide6.QtCore import QSettings

    from bench_gui import make_workspace
    from explorer.ui.app import create_application
    from explorer.ui.main_window import MainWindow

    app = create_application()
    tmp = tempfile.mkdtemp(prefix="bench-gui-runs-")
    settings = QSettings(f"{tmp}/settings.ini", QSettings.Format.IniFormat)
    settings.setValue("runs/data_dir", tmp)
    settings.setValue("runs/autosave_minutes", autosave_minutes)
    window = MainWindow(settings=settings, load_demo=False)
    window.resize(1400, 900)
    window.show()
    window.create_panels()
    if not record:
        window.controller.runs = None
    workspace = make_workspace(steps)
    window.controller.set_workspace(workspace)
    while window.controller.jobs.busy:
        app.processEvents()
    tokens = [0]
    window.bus.step_metrics.connect(lambda batch: tokens.__setitem__(
        0, tokens[0] + sum(s.tokens for s in batch)))
    window.controller.training_finished.connect(lambda _: app.quit())
    spent.clear()
    started = time.perf_counter()
    window.controller.train()
    recorder = window.controller.runs.recorder if record else None
    app.exec()  # (quit() closes the window too: the run is let go of)
    elapsed = time.perf_counter() - started
    result = {"tokens_per_s": tokens[0] / elapsed, "elapsed_s": elapsed,
              "recorder_share": sum(spent.values()) / elapsed,
              "parts_s": {name: round(s, 3) for name, s in spent.items()},
              "autosaves": recorder.autosaves if recorder else 0}
    window.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--autosave-minutes", type=float, default=0.1)
    args = parser.parse_args()

    from explorer.runs.app_runs import RunRecorder

    spent: dict = {}
    timed(RunRecorder, ("start", "record", "_step_done", "finish"), spent)
    app_run(50, True, args.autosave_minutes, spent)  # warm-up: imports, first paint
    pairs = []
    for round_ in range(args.rounds):
        order = (True, False) if round_ % 2 == 0 else (False, True)
        runs = {record: app_run(args.steps, record, args.autosave_minutes, spent)
                for record in order}
        pairs.append(runs)
    ratios = [p[True]["tokens_per_s"] / p[False]["tokens_per_s"] for p in pairs]
    shares = [p[True]["recorder_share"] for p in pairs]
    report = {
        "steps": args.steps, "rounds": args.rounds, "autosave_minutes": args.autosave_minutes,
        "recorded_tokens_per_s": [round(p[True]["tokens_per_s"]) for p in pairs],
        "plain_tokens_per_s": [round(p[False]["tokens_per_s"]) for p in pairs],
        "ratios": [round(r, 3) for r in ratios],
        "ratio_median": round(statistics.median(ratios), 3),
        "recorder_share_of_wall_time": [round(s, 4) for s in shares],
        "recorder_share_median": round(statistics.median(shares), 4),
        "autosaves": [p[True]["autosaves"] for p in pairs],
        "recorded_elapsed_s": [round(p[True]["elapsed_s"], 1) for p in pairs],
        "recorder_parts_s": [p[True]["parts_s"] for p in pairs],
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
