"""What writing the run folder costs: tokens/s of the engine with a RunWriter (a metrics row per
step and evaluation, TensorBoard scalars when installed, a full snapshot every 100 steps) against
the same engine writing nothing, on bench_engine_overhead's models, in one process, alternating
rounds so machine load affects both alike. Target: the writer costs <= 2%.

    python benchmarks/bench_run_overhead.py [--rounds 6] [--steps 100] [--threads 1]

Each round is `--steps` steps of each side; with --steps 100 every round holds exactly one
snapshot. The one-off costs (the starting checkpoint, the last snapshot and the final checkpoint)
are reported apart. On a loaded machine the tokens/s of the two sides swing by 10-30% from round
to round; the CPU time spent inside RunWriter.record, as a share of the run side's CPU time (this
thread's), is the steadier measure of the writer's cost.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine_overhead import CASES  # noqa: E402
from explorer.events import StepMetrics, TrainingFinished  # noqa: E402
from explorer.runs import RunWriter  # noqa: E402
from explorer.training import TrainConfig, Trainer, build_workspace  # noqa: E402


WRITER_CPU_S = [0.0]  # CPU seconds spent inside RunWriter.record, the snapshots included


def steps_of(events, steps: int, writer=None) -> tuple[int, float]:
    tokens, done, started = 0, 0, time.perf_counter()
    while done < steps:
        event = next(events)
        if writer is not None:
            before = time.thread_time()
            writer.record(event)
            WRITER_CPU_S[0] += time.thread_time() - before
        if isinstance(event, StepMetrics):
            tokens += event.tokens
            done += 1
    return tokens, time.perf_counter() - started


def measure(case: dict, rounds: int, steps: int, threads: int, every: int) -> dict:
    config = TrainConfig(steps=10**9, eval_every=0, device="cpu", num_threads=threads, lr=1e-3,
                         **case["train"])
    sides = {}
    for side in ("plain", "run"):
        torch.manual_seed(0)
        workspace = build_workspace(case["data"], case["family"], **case["model"])
        trainer = Trainer(workspace, config)
        sides[side] = (workspace, trainer, trainer.run())
    folder = Path(tempfile.mkdtemp(prefix="bench-run-")) / "run"
    writer = RunWriter(folder, snapshot_every=every, stream=io.StringIO())
    writer.claim(resume=False)
    workspace, trainer, events = sides["run"]
    started = time.perf_counter()
    writer.start(workspace, trainer, build={"family": case["family"], "seed": 0})
    start_s = time.perf_counter() - started
    ratios, rates = [], {"plain": [], "run": []}
    run_cpu_s = 0.0
    for r in range(rounds + 1):
        if r == 1:
            WRITER_CPU_S[0] = 0.0
        order = ("plain", "run") if r % 2 == 0 else ("run", "plain")
        measured = {}
        for side in order:
            cpu = time.thread_time()
            tokens, seconds = steps_of(sides[side][2], steps, writer if side == "run" else None)
            measured[side] = tokens / seconds
            if side == "run" and r > 0:
                run_cpu_s += time.thread_time() - cpu
        if r == 0:
            continue  # warm-up: first allocations, the feed's first epoch
        ratios.append(measured["run"] / measured["plain"])
        for side in measured:
            rates[side].append(measured[side])
    started = time.perf_counter()
    writer.finish(workspace, TrainingFinished(workspace.step, "done"))
    writer.close()
    finish_s = time.perf_counter() - started
    for _, _, events in sides.values():
        events.close()
    snapshot_mb = sum(p.stat().st_size for p in (folder / "snapshots").rglob("*")) / 1e6
    snapshots = len(list((folder / "snapshots").iterdir()))
    return {"ratio": statistics.median(ratios), "plain": statistics.median(rates["plain"]),
            "run": statistics.median(rates["run"]), "ratios": ratios, "start_s": start_s,
            "finish_s": finish_s, "snapshot_mb": snapshot_mb / max(snapshots, 1),
            "writer_share": WRITER_CPU_S[0] / run_cpu_s}


def main() -> None:
    parser = argparse.ArgumentParser(description="tokens/s with and without the run folder")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=100, help="steps per round and side")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--snapshot-every", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        import tensorboard  # noqa: F401
        tb = "with TensorBoard scalars"
    except ImportError:
        tb = "without TensorBoard"
    print(f"| model | no run tok/s | run tok/s | ratio (median) | per round | writer's CPU share | "
          f"snapshot MB | start, finish s |  ({args.rounds} rounds x {args.steps} steps, snapshot every "
          f"{args.snapshot_every}, {tb}, {args.threads} thread(s), torch {torch.__version__})")
    print("|---|---:|---:|---:|---|---:|---:|---|")
    worst = float("inf")
    for name, case in CASES.items():
        m = measure(case, args.rounds, args.steps, args.threads, args.snapshot_every)
        worst = min(worst, m["ratio"])
        rounds = " ".join(f"{r:.3f}" for r in m["ratios"])
        print(f"| {name} | {m['plain']:,.0f} | {m['run']:,.0f} | {m['ratio']:.3f} | {rounds} | "
              f"{100 * m['writer_share']:.2f}% | {m['snapshot_mb']:.1f} | {m['start_s']:.2f}, {m['finish_s']:.2f} |", flush=True)
    print(f"worst median ratio {worst:.3f} ({'PASS' if worst >= 0.98 else 'FAIL'}: the run folder "
          "may cost at most 2%)")


if __name__ == "__main__":
    main()
