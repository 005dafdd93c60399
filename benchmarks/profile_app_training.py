"""Where the training thread spends its time when the app trains (bench_gui.py's in-app run).

    python benchmarks/profile_app_training.py [--steps 600] [--rounds 1] [--threads 1]
    python benchmarks/profile_app_training.py --gui-profile [--steps 600]
    python benchmarks/profile_app_training.py --switch-interval-ms 5 0.2 [--rounds 3]

1. Time accounting per thread (Linux /proc/thread-self/schedstat): for headless training's thread,
   the app's training thread and the app's GUI thread, the wall time split into CPU time, time
   waiting for a free core (the machine's load) and time blocked (waiting for the GIL, a lock or
   the disk). On a shared machine only the CPU and blocked columns say something about the app;
   the wait column is the other processes'. The training thread's time is also split into its
   steps and the work between steps (probe, run rows and snapshots, signals).
2. The training thread's extra work (the run's snapshots and rows, the probe and its parts, the
   embeddings' copy), timed by wrapping the app's own functions, as shares of the wall time.
3. `--switch-interval-ms A B ...`: each round runs the app once per GIL switch interval
   (sys.setswitchinterval; Python's default is 5 ms), in rotating order.
4. `--gui-profile`: instead, one in-app run with cProfile timing the GUI thread's CPU
   (time.thread_time) while it trains: its CPU ms per 100 steps, split by the app's callers.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

SPENT: dict[str, float] = collections.defaultdict(float)
CALLS: dict[str, int] = collections.defaultdict(int)


def timed(owner, name: str, label: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[label] += time.perf_counter() - started
            CALLS[label] += 1

    setattr(owner, name, wrapper)


def sched() -> tuple[float, float, float]:
    """(wall, CPU, waited for a core) seconds of the calling thread so far."""
    with open("/proc/thread-self/schedstat") as stat:
        cpu_ns, wait_ns, _slices = stat.read().split()
    return time.perf_counter(), int(cpu_ns) / 1e9, int(wait_ns) / 1e9


class Account:
    """wall / CPU / waiting for a core / blocked seconds of one thread over some intervals."""

    def __init__(self) -> None:
        self.wall = self.cpu = self.wait = 0.0

    def add(self, start, end) -> None:
        self.wall += end[0] - start[0]
        self.cpu += end[1] - start[1]
        self.wait += end[2] - start[2]

    def row(self, label: str, steps: int) -> str:
        blocked = max(0.0, self.wall - self.cpu - self.wait)
        per = 1000 / steps
        return (f"  {label:34s} wall {self.wall:7.2f} s  CPU {self.cpu:7.2f}  waiting for a core "
                f"{self.wait:7.2f}  blocked {blocked:6.2f}   per step: CPU {self.cpu * per:6.2f} ms,"
                f" blocked {blocked * per:5.2f} ms")


STEP_MARKS: dict[str, list] = collections.defaultdict(list)  # thread name -> [(start, end)]


def mark_steps(engine) -> None:
    original = engine.Trainer._step

    @functools.wraps(original)
    def _step(self, *args, **kwargs):
        start = sched()
        try:
            return original(self, *args, **kwargs)
        finally:
            STEP_MARKS[threading.current_thread().name].append((start, sched()))

    engine.Trainer._step = _step


def split(marks) -> tuple[Account, Account]:
    """The thread's time in its steps and between them (from the first step's start)."""
    steps = Account()
    for start, end in marks:
        steps.add(start, end)
    between = Account()
    between.add(marks[0][0], marks[-1][1])
    for attr in ("wall", "cpu", "wait"):
        setattr(between, attr, getattr(between, attr) - getattr(steps, attr))
    return steps, between


def account_headless(bench_gui, steps: int) -> list[tuple[str, Account]]:
    STEP_MARKS.clear()
    start = sched()
    tokens_per_s = bench_gui.headless_tokens_per_s(steps)
    whole = Account()
    whole.add(start, sched())
    in_steps, between = split(STEP_MARKS[threading.current_thread().name])
    print(f"headless: {tokens_per_s:,.0f} tokens/s, load {os.getloadavg()[0]:.1f}")
    return [("headless thread", whole), ("  its steps", in_steps), ("  between steps", between)]


def account_app(bench_gui, steps: int) -> list[tuple[str, Account]]:
    from explorer.ui.training_worker import TrainingWorker

    STEP_MARKS.clear()
    worker_account = Account()
    original_run = TrainingWorker.run

    def run(self):
        start = sched()
        try:
            original_run(self)
        finally:
            worker_account.add(start, sched())

    TrainingWorker.run = run
    try:
        gui = Account()
        start = sched()
        result = bench_gui.app_run(steps)
        gui.add(start, sched())
    finally:
        TrainingWorker.run = original_run
    (marks,) = [m for name, m in STEP_MARKS.items() if name != threading.current_thread().name]
    in_steps, between = split(marks)
    print(f"in-app: {result['tokens_per_s']:,.0f} tokens/s, load {os.getloadavg()[0]:.1f}")
    return [("app training thread", worker_account), ("  its steps", in_steps),
            ("  between steps", between), ("app GUI thread (window, train, wait)", gui)]


def profile_gui_thread(bench_gui, steps: int) -> None:
    """The GUI thread's CPU while the app trains, by caller (the app's own functions)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.thread_time)  # CPU, not wall: the machine is shared
    result = bench_gui.app_run(steps, profiler)
    print(f"GUI thread: {result['gui_cpu_ms_per_100_steps']:.0f} ms CPU per 100 steps (profiled), "
          f"{result['tokens_per_s']:,.0f} tokens/s, load {os.getloadavg()[0]:.1f}")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats("explorer", 40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=1, help="headless, in-app pairs")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads on both sides (1: the GIL, not the cores, decides)")
    parser.add_argument("--switch-interval-ms", type=float, nargs="+", default=None,
                        help="in-app runs per round, one per GIL switch interval while training")
    parser.add_argument("--gui-profile", action="store_true",
                        help="profile the GUI thread's CPU by caller during one in-app run")
    args = parser.parse_args()
    import bench_gui

    import explorer.analysis.embeddings as embeddings
    import explorer.analysis.probe as probe
    import explorer.training.engine as engine
    from explorer.runs.writer import RunWriter

    bench_gui.THREADS[0] = args.threads
    if args.gui_profile:
        bench_gui.headless_tokens_per_s(20)  # imports and first-use costs out of the run
        profile_gui_thread(bench_gui, args.steps)
        return
    mark_steps(engine)
    timed(engine.Trainer, "_evaluate", "evaluations")
    timed(RunWriter, "snapshot", "run snapshots (write + fsync)")
    timed(RunWriter, "flush_rows", "run rows (their writes)")
    timed(probe, "probe", "probe (whole)")
    timed(probe, "_gradient_norms", "probe: its forward and backward pass (all gradients)")
    timed(embeddings, "embedding_matrices", "probe: embeddings copy")
    bench_gui.headless_tokens_per_s(20)  # imports and first-use costs out of the first round
    default_interval = sys.getswitchinterval()
    intervals = args.switch_interval_ms or [1000 * default_interval]
    for round_ in range(args.rounds):
        print(f"round {round_ + 1}, {args.steps} steps, {args.threads} thread(s)")
        headless = account_headless(bench_gui, args.steps)
        shift = round_ % len(intervals)  # the machine's speed drifts: rotate which goes first
        for interval_ms in intervals[shift:] + intervals[:shift]:
            sys.setswitchinterval(interval_ms / 1000)
            print(f" in-app, GIL switch interval {interval_ms:g} ms while training")
            SPENT.clear()
            CALLS.clear()
            started = time.perf_counter()
            accounts = headless + account_app(bench_gui, args.steps)
            wall = time.perf_counter() - started
            sys.setswitchinterval(default_interval)
            for label, account in accounts:
                print(account.row(label, args.steps))
            print("  the training thread's extra work (wall time):")
            for label, seconds in sorted(SPENT.items(), key=lambda item: -item[1]):
                print(f"    {label:48s} {seconds:7.2f} s  {100 * seconds / wall:5.1f}%  "
                      f"({CALLS[label]} calls)")


if __name__ == "__main__":
    main()
