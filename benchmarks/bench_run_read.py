"""Opening a long run: RunReader on a run folder of 100,000 steps, an evaluation every 100 steps
and 50 snapshots, from nothing to the curves' numpy arrays and the snapshot list. Target: < 1 s.

    python benchmarks/bench_run_read.py [--steps 100000] [--snapshots 50] [--repeats 5]

The run is written with RunWriter's row encoder, durable.json_line (the rows of a real `explorer
train`), and its snapshots are real checkpoints of a tiny model. Reported: the median wall-clock
and CPU time in this process (page cache warm), and those of a fresh Python process that imports
explorer.runs, opens the run and builds the curves. On a shared, loaded VM wall time can be several times the
CPU time.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.runs import RunReader, snapshot_dir  # noqa: E402
from explorer.durable import json_line as encode_row  # noqa: E402

OPEN = """
import sys, time
started, cpu = time.perf_counter(), time.process_time()
from explorer.runs import RunReader
reader = RunReader(sys.argv[1]); reader.config(); reader.read_new()
curves = reader.curves(); snapshots = reader.snapshots()
assert len(curves.train["step"]) == int(sys.argv[2]) and len(snapshots) == int(sys.argv[3])
print(time.perf_counter() - started, time.process_time() - cpu)
"""


def make_run(folder: Path, steps: int, snapshots: int) -> None:
    from explorer.training import DataSpec, TrainConfig, build_workspace, save_checkpoint

    workspace = build_workspace(DataSpec(task="copy", n_train=64, n_val=8), "seq2seq",
                                embed_dim=8, hidden_size=8)
    workspace.train_config = TrainConfig(steps=steps)
    folder.mkdir(parents=True)
    save_checkpoint(workspace, folder / "latest")  # config.json and weights at the top level
    for path in (folder / "latest").iterdir():
        path.rename(folder / path.name)
    (folder / "latest").rmdir()
    config = json.loads((folder / "config.json").read_text())
    config["run"] = {"format": "sequence-model-explorer/run/1", "seed": 0}
    config["step"] = steps  # the latest checkpoint is the run's last step, as a real run's is
    (folder / "config.json").write_text(json.dumps(config))
    rng = random.Random(0)
    every = steps // snapshots
    with open(folder / "metrics.jsonl", "wb") as out:
        out.write(encode_row({"event": "started", "step": 0, "train": config["train"]}))
        for step in range(1, steps + 1):
            loss = 4.0 * math.exp(-step / 20000) + rng.random() * 0.1
            out.write(encode_row({
                "step": step, "loss": loss, "lr": 1e-3, "grad_norm": rng.random(),
                "grad_norm_clipped": rng.random(), "tokens": 768 + rng.randrange(64),
                "tokens_per_s": 20000 + rng.random() * 1000, "elapsed_s": step * 0.04}))
            if step % 100 == 0:
                out.write(encode_row({"event": "eval", "step": step, "val_loss": loss + 0.1,
                                      "perplexity": math.exp(loss + 0.1),
                                      "token_accuracy": rng.random(), "bleu": 30 * rng.random()}))
            if step % every == 0:
                workspace.step = step
                save_checkpoint(workspace, snapshot_dir(folder, step), optimizer=False)
                out.write(encode_row({"event": "snapshot", "step": step}))
        out.write(encode_row({"event": "finished", "step": steps, "reason": "done"}))


def open_run(folder: Path):
    reader = RunReader(folder)
    reader.config()
    reader.read_new()
    return reader.curves(), reader.snapshots()


def main() -> None:
    parser = argparse.ArgumentParser(description="open a long run and build its curves")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-read-")) / "run"
    try:
        make_run(folder, args.steps, args.snapshots)
        size_mb = (folder / "metrics.jsonl").stat().st_size / 1e6
        times, cpu_times = [], []
        for _ in range(args.repeats):
            started, cpu = time.perf_counter(), time.process_time()
            curves, snapshots = open_run(folder)
            times.append(time.perf_counter() - started)
            cpu_times.append(time.process_time() - cpu)
        assert len(curves.train["step"]) == args.steps and len(snapshots) == args.snapshots
        fresh = [[float(x) for x in subprocess.run(
            [sys.executable, "-c", OPEN, str(folder), str(args.steps), str(args.snapshots)],
            capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent.parent).stdout.split()]
            for _ in range(args.repeats)]
        median, fresh_median = statistics.median(times), statistics.median(f[0] for f in fresh)
        cpu, fresh_cpu = statistics.median(cpu_times), statistics.median(f[1] for f in fresh)
        print(f"| {args.steps:,} steps, {len(curves.eval['step']):,} evaluations, "
              f"{args.snapshots} snapshots, metrics.jsonl {size_mb:.1f} MB | wall {median:.3f} s "
              f"(runs: {' '.join(f'{t:.3f}' for t in times)}), CPU {cpu:.3f} s | fresh process "
              f"with imports: wall {fresh_median:.3f} s, CPU {fresh_cpu:.3f} s |")
        verdict = "PASS" if max(median, fresh_median) < 1 else "FAIL"
        print(f"{verdict}: curves in < 1 s of wall-clock time "
              f"(CPU time {'within' if max(cpu, fresh_cpu) < 1 else 'over'} 1 s)")
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
