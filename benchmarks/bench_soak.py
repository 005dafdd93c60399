"""Soak benchmark (issue 16): a long training in the real main window, every panel docked and live.

    python benchmarks/bench_soak.py [--steps 10000] [--every 500] [--action-every 3] [--json PATH]
    python benchmarks/bench_soak.py --quick      # 600 steps, a sample every 100

The app trains the demo's model (the "tiny" encoder-decoder Transformer: 2+2 layers, 4 heads,
d_model 64, 172k parameters, on `reverse`, 1000 training pairs, batch 16) in its worker thread,
offscreen, in a 2560 x 1440 window whose docks are un-tabbed into three columns, so that every
panel is visible and redraws what the probe snapshots carry. Every --action-every seconds the
harness does what a user does meanwhile, in turn: a new probe input, a beam search, a
step-through (reset, a few steps, one back), a greedy/beam/sample comparison, a scrub through the
attention panel's layers and heads and the hidden panel's layers, and a settings change (the
learning rate, or the batch size, which restarts the trainer in a new thread).

Every --every steps it records the process's resident memory and glibc's heap in use, the number
of Python objects (after gc.collect()), of QObjects (the window's descendants and the
application's), of widgets and of items in the pyqtgraph scenes, and which Python types and
QObject classes grew since the previous sample (soak_measures.py). A 10 ms QTimer on the GUI
thread measures how late it fires (the ticks a sample itself delays are left out; --stalls also
says where the GUI thread was meanwhile), and a Qt message handler records every warning.

Targets: resident memory grows < 50 MB after warm-up; object counts flat; timer p99 lateness
< 50 ms; no Qt warning. tests/ui/test_soak_quick.py runs the same harness for a few hundred steps.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
_HERE = os.path.dirname(os.path.abspath(__file__))
if __name__ == "__main__":  # run as a script from anywhere: this checkout's explorer/ first
    sys.path.insert(0, os.path.dirname(_HERE))
if _HERE not in sys.path:  # soak_measures.py, beside this file (also when a test loads it)
    sys.path.append(_HERE)

from soak_measures import (  # noqa: E402
    StallWatch, count_qobjects, malloc_heap_mb, resident_mb, trimmed_resident_mb, type_counts,
)

TIMER_MS = 10
RSS_TARGET_MB = 50.0
P99_TARGET_MS = 50.0
TOP_TYPES = 8  # the types that grew most, per sample


def make_workspace(n_train: int = 1000, batch_size: int = 16, eval_every: int = 250):
    """The demo's model and task (explorer/demo.py), with a fixed seed."""
    import torch

    from explorer.training.config import TrainConfig
    from explorer.training.setup import DataSpec, build_workspace

    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="reverse", n_train=n_train, n_val=50), "transformer",
                                preset="tiny", seed=0)
    workspace.train_config = TrainConfig(batch_size=batch_size, eval_every=eval_every,
                                         eval_examples=32, bleu_examples=8, lr=1e-3, seed=0,
                                         device="cpu")
    return workspace


WINDOW = (2560, 1440)  # a large desktop monitor, as someone watching every panel would use
COLUMNS = (("curves", "bleu", "positional"), ("attention", "gradients", "hidden", "embeddings"),
           ("beam", "step", "compare"))


def dock_every_panel(window) -> None:
    """Un-tab the docks into three columns of a WINDOW-sized window, one panel above the other,
    so that every panel is visible (and the training controls below the first column)."""
    from PySide6.QtCore import Qt

    window.resize(*WINDOW)
    columns = [[window.docks[p] for p in column if p in window.docks] for column in COLUMNS]
    placed = {dock for column in columns for dock in column}
    columns[-1] += [dock for dock in window.docks.values() if dock not in placed]  # new panels
    columns[0].append(window.controls_dock)
    left = Qt.DockWidgetArea.LeftDockWidgetArea
    for dock in (dock for column in columns for dock in column):
        window.removeDockWidget(dock)
    window.addDockWidget(left, columns[0][0])
    for before, column in zip(columns, columns[1:]):
        window.splitDockWidget(before[0], column[0], Qt.Orientation.Horizontal)
    for column in columns:
        for above, below in zip(column, column[1:]):
            window.splitDockWidget(above, below, Qt.Orientation.Vertical)
    for dock in (dock for column in columns for dock in column):  # new panels' docks too
        dock.show()
    width = WINDOW[0] // len(columns)
    window.resizeDocks([column[0] for column in columns], [width] * len(columns),
                       Qt.Orientation.Horizontal)
    for column in columns:
        window.resizeDocks(column, [WINDOW[1] // len(column)] * len(column),
                           Qt.Orientation.Vertical)


class SoakRun:
    """Drives a shown MainWindow through `steps` training steps with user actions in between;
    `report` holds the samples and the verdicts once `finished` is True."""

    def __init__(self, app, window, workspace, steps: int, every: int, action_every_s: float,
                 warmup_steps: int | None = None, log=None, stalls: bool = False,
                 census: bool = True, trim: bool = False) -> None:
        from PySide6.QtCore import QEventLoop, QTimer

        self.app, self.window, self.workspace = app, window, workspace
        self.steps, self.every = steps, every
        self.warmup_steps = warmup_steps if warmup_steps is not None else min(2 * every, steps // 4)
        self.log = log
        self.trained = 0
        self.next_sample = every
        self.samples: list[dict] = []
        self.lateness_ms: list[float] = []
        self.actions: collections.Counter = collections.Counter()
        self.action_errors: list[str] = []
        self.finished = False
        self._types: collections.Counter | None = None
        self._warm_types: collections.Counter | None = None  # at the first sample after warm-up
        self._classes: collections.Counter | None = None  # the window's QObjects by class
        self._action_index = 0
        self._settings_changes = 0
        self._restarting = False
        self._skip_tick = False
        self._last_tick = time.perf_counter()
        self._started = time.perf_counter()
        self.stalls = StallWatch(self) if stalls else None
        self.census = census  # Python objects by type (gc.collect + gc.get_objects: slow)
        self.trim = trim  # also the resident memory after malloc_trim
        val = workspace.data.val
        self.examples = [(src, tgt) for src, tgt in val[:20]]

        # its own event loop, not the application's: app.quit() would end (and emit aboutToQuit
        # to) everything else in the process, a test session included
        self.loop = QEventLoop()
        self.tick_timer = QTimer()
        self.tick_timer.setInterval(TIMER_MS)
        self.tick_timer.timeout.connect(self._tick)
        self.action_timer = QTimer()
        self.action_timer.setInterval(round(action_every_s * 1000))
        self.action_timer.timeout.connect(self._act)
        window.bus.step_metrics.connect(self._on_steps)
        window.controller.training_finished.connect(self._on_finished)
        window.controller.error.connect(lambda message: self.action_errors.append(message))

    # -- driving ---------------------------------------------------------------------------------

    def start(self) -> None:
        self.sample()  # step 0: the window, the panels and the first look, before training
        self._started = time.perf_counter()
        self._last_tick = self._started
        self.tick_timer.start()
        self.action_timer.start()
        if self.stalls is not None:
            self.stalls.start()
        self.window.controller.train(steps=self.steps)

    def _on_steps(self, batch) -> None:
        self.trained += len(batch)
        if self.trained >= self.next_sample and self.trained < self.steps:
            self.next_sample += self.every
            self.sample()

    def _on_finished(self, finished) -> None:
        if self._restarting and finished.reason != "done":
            return  # the run a batch-size change stopped; the next one goes on (a run that had
            # already reached its last step is not restarted: this is its end)
        if self.stalls is not None:
            self.stalls.stop()
        self.tick_timer.stop()
        self.action_timer.stop()
        if finished.reason != "done":
            self.action_errors.append(f"training ended with {finished.reason}: {finished.message}")
        # let the last decodes and probes land, then the final sample
        deadline = time.monotonic() + 60
        while self._busy() and time.monotonic() < deadline:
            self.app.processEvents()
            time.sleep(0.01)
        self.app.processEvents()
        self.sample()
        self.finished = True
        self.loop.quit()

    def _busy(self) -> bool:
        return self.window.controller.jobs.busy or self.window.bus.probing or any(
            panel.busy() for panel in self.window.panels.values())

    def _tick(self) -> None:
        now = time.perf_counter()
        if self._skip_tick:  # this tick waited on a sample's gc pass, not on the app
            self._skip_tick = False
        else:
            self.lateness_ms.append(max(0.0, (now - self._last_tick) * 1000 - TIMER_MS))
        self._last_tick = now

    def _act(self) -> None:
        """One user action, in turn: what a person does while the model trains."""
        names = ("probe", "beam", "step", "compare", "scrub", "settings")
        name = names[self._action_index % len(names)]
        source, target = self.examples[(self._action_index // len(names)) % len(self.examples)]
        self._action_index += 1
        panels = self.window.panels
        try:
            if name == "probe":
                self.window.bus.probe_requested.emit(source, target)
            elif name == "beam":
                panels["beam"].set_source(source)
            elif name == "step":
                step = panels["step"]
                step.set_source(source)
                for _ in range(4):
                    step.step()
                step.back()
            elif name == "compare":
                panels["compare"].set_source(source, target)
            elif name == "settings":
                self._change_settings()
            else:
                for box in (panels["attention"].head_box, panels["attention"].layer_box,
                            panels["hidden"].layer_box):
                    for index in range(box.count()):
                        box.setCurrentIndex(index)
                        self.app.processEvents()
            self.actions[name] += 1
        except Exception as exc:  # noqa: BLE001 - recorded and reported; the soak goes on
            self.action_errors.append(f"{name}: {type(exc).__name__}: {exc}")

    def _change_settings(self) -> None:
        """As in the training controls: the learning rate (the trainer picks it up), or the
        batch size, which restarts the trainer from this step (a new worker thread)."""
        controller = self.window.controller
        config = controller.train_config
        self._settings_changes += 1
        if self._settings_changes % 2:
            controller.update_train_config(lr=config.lr * (0.8 if self._settings_changes % 4 == 1
                                                           else 1.25))
            return
        self._restarting = True
        try:
            controller.update_train_config(batch_size=24 if config.batch_size == 16 else 16)
        finally:
            self._restarting = False

    # -- measuring -------------------------------------------------------------------------------

    def sample(self) -> None:
        started = time.perf_counter()
        grew, entry = [], {}
        if self.census:
            gc.collect()
            types, entry["dead_wrappers"] = type_counts()
            entry["py_objects"] = sum(types.values())
            if self._types is not None:
                diff = types.copy()
                diff.subtract(self._types)
                grew = [(name, n) for name, n in diff.most_common(TOP_TYPES) if n > 0]
            self._types = types
            if self._warm_types is None and self.trained >= self.warmup_steps:
                self._warm_types = types
        qt = count_qobjects(self.app, self.window)
        classes = qt.pop("qobject_classes")
        if self._classes is not None:
            diff = classes.copy()
            diff.subtract(self._classes)
            grew += [(f"Q:{name}", n) for name, n in diff.most_common(TOP_TYPES) if n > 0]
        self._classes = classes
        self.samples.append({
            "step": self.trained,
            "elapsed_s": round(time.perf_counter() - self._started, 1),
            "rss_mb": round(resident_mb(), 1),
            **malloc_heap_mb(),
            **({"rss_trimmed_mb": round(trimmed_resident_mb() or 0, 1)} if self.trim else {}),
            **entry,
            **qt,
            "grew": grew,
            "sample_ms": round((time.perf_counter() - started) * 1000, 1),
        })
        self._skip_tick = True

    # -- verdict ---------------------------------------------------------------------------------

    def after_warmup(self) -> list[dict]:
        later = [s for s in self.samples if s["step"] >= self.warmup_steps]
        return later if len(later) >= 2 else self.samples[-2:]

    def report(self) -> dict:
        warm = self.after_warmup()
        first, last = warm[0], warm[-1]
        lateness = sorted(self.lateness_ms)
        p99 = lateness[min(len(lateness) - 1, int(0.99 * len(lateness)))] if lateness else float("nan")
        # a count's growth: the least of the last three samples against the first after warm-up,
        # so that a transient object (a dock's QPropertyAnimation mid-flight, a QStatusBar's timer)
        # caught by one sample is not taken for a leak, while anything that accumulates is
        keys = ("rss_mb", "rss_trimmed_mb", "heap_in_use_mb", "py_objects", "window_qobjects", "app_qobjects", "widgets", "scene_items")
        growth = {key: round(min(s[key] for s in warm[-3:]) - first[key], 1)
                  for key in keys if key in first}
        warnings = list(self.log.warnings) if self.log is not None else []
        net = collections.Counter()
        if self._warm_types is not None and self._types is not None:
            net = self._types.copy()
            net.subtract(self._warm_types)
        report = {
            "steps": self.trained,
            "wall_s": round(time.perf_counter() - self._started, 1),
            "warmup_steps": self.warmup_steps,
            "samples": self.samples,
            "growth_after_warmup": growth,
            "types_grown_after_warmup": [(n, c) for n, c in net.most_common(15) if c > 0],
            "timer_ticks": len(lateness),
            "timer_late_p50_ms": round(statistics.median(lateness), 2) if lateness else None,
            "timer_late_p99_ms": round(p99, 2),
            "timer_late_max_ms": round(lateness[-1], 1) if lateness else None,
            "actions": dict(self.actions),
            "errors": self.action_errors,
            "qt_warnings": warnings,
            "load_average": os.getloadavg(),
        }
        if self.stalls is not None:  # 5 ms watchdog samples of the GUI thread while it was late
            report["stalls"] = self.stalls.where.most_common(25)
        qobjects_flat = all(growth[k] <= 0 for k in ("window_qobjects", "app_qobjects", "widgets"))
        report["pass"] = {
            f"rss growth < {RSS_TARGET_MB:g} MB": growth["rss_mb"] < RSS_TARGET_MB,
            "qobjects and widgets flat": qobjects_flat,
            # pyqtgraph items come from pools that grow to their largest use (labels of the
            # biggest beam tree so far), bounded; in the last half of the run they stay put
            "scene items flat in the second half": min(s["scene_items"] for s in warm[-3:])
                <= warm[len(warm) // 2]["scene_items"],
            f"timer p99 < {P99_TARGET_MS:g} ms": p99 < P99_TARGET_MS,
            "no qt warnings": not warnings,
            "no errors": not self.action_errors,
        }
        if self.census:
            # the curves' history lives in numpy buffers: no Python object per step may remain
            report["pass"]["python objects flat (< 1 per 10 steps)"] = (
                growth["py_objects"] < max(1, last["step"] - first["step"]) / 10)
        return report


def run_soak(steps: int, every: int, action_every_s: float, warmup_steps: int | None = None,
             workspace=None, stalls: bool = False, census: bool = True,
             trim: bool = False) -> dict:
    """The whole soak in this process: -> the report."""
    from PySide6.QtCore import QCoreApplication, QEvent, QSettings

    from explorer.ui.app import QtMessageLog, create_application
    from explorer.ui.main_window import MainWindow

    app = create_application()
    log = QtMessageLog()
    log.install()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
            window = MainWindow(settings=QSettings(f"{tmp}/settings.ini",
                                                   QSettings.Format.IniFormat), load_demo=False)
            window.show()
            window.create_panels()
            dock_every_panel(window)
            workspace = workspace if workspace is not None else make_workspace()
            window.controller.set_workspace(workspace)
            deadline = time.monotonic() + 120  # the first look, probe and decodes land first
            while time.monotonic() < deadline and (
                    window.controller.jobs.busy or window.bus.probing
                    or any(p.busy() for p in window.panels.values())
                    or not all(p.has_content() for p in window.panels.values())):
                app.processEvents()
                time.sleep(0.01)
            hidden = [p for p, panel in window.panels.items() if not panel.isVisible()]
            run = SoakRun(app, window, workspace, steps, every, action_every_s, warmup_steps, log,
                          stalls, census, trim)
            run.start()
            if not run.finished:
                run.loop.exec()
            report = run.report()
            report["hidden_panels"] = hidden
            report["empty_panels"] = [p for p, panel in window.panels.items()
                                      if not panel.has_content()]
            window.close()
            window.deleteLater()
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
            app.processEvents()
    finally:
        log.uninstall()
    return report


def print_table(report: dict) -> None:
    columns = [c for c in ("step", "elapsed_s", "rss_mb", "rss_trimmed_mb", "heap_in_use_mb",
                           "heap_free_mb", "py_objects",
                           "dead_wrappers", "window_qobjects", "app_qobjects", "widgets",
                           "scene_items", "sample_ms") if c in report["samples"][0]]
    print(" ".join(f"{c:>{len(c)}}" for c in columns))
    for s in report["samples"]:
        print(" ".join(f"{s[c]:>{len(c)}}" for c in columns))
        if s["grew"]:
            print("    grew:", ", ".join(f"{name} +{n}" for name, n in s["grew"]))
    print(f"after warm-up ({report['warmup_steps']} steps): {report['growth_after_warmup']}")
    print("types grown after warm-up:",
          ", ".join(f"{name} +{n}" for name, n in report["types_grown_after_warmup"]) or "none")
    print(f"timer: {report['timer_ticks']} ticks, lateness p50 {report['timer_late_p50_ms']} ms, "
          f"p99 {report['timer_late_p99_ms']} ms, max {report['timer_late_max_ms']} ms")
    print(f"actions: {report['actions']}; wall {report['wall_s']} s; load {report['load_average']}")
    for problem in ("errors", "qt_warnings", "hidden_panels", "empty_panels"):
        if report.get(problem):
            print(f"{problem}: {report[problem]}")
    for where, n in report.get("stalls", []):
        print(f"  stalled x{n}: {where}")
    for target, ok in report["pass"].items():
        print(f"  {'PASS' if ok else 'FAIL'}  {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=500, help="steps between samples")
    parser.add_argument("--action-every", type=float, default=3.0,
                        help="seconds between user actions (probe, decode, step, compare, scrub)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="steps before the growth is counted (default: 2 samples)")
    parser.add_argument("--quick", action="store_true", help="600 steps, a sample every 100")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--trim", action="store_true",
                        help="also sample the resident memory after malloc_trim (glibc): "
                             "memory freed but kept by the allocator is not a leak")
    parser.add_argument("--stalls", action="store_true",
                        help="also report where the GUI thread was while the timer was late")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.every = 600, 100
    report = run_soak(args.steps, args.every, args.action_every, args.warmup,
                      stalls=args.stalls, trim=args.trim)
    print_table(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if all(report["pass"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
