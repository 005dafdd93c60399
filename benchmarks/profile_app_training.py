"""Where the training thread spends its time when the app trains (bench_gui.py's in-app run).

    python benchmarks/profile_app_training.py [--steps 600]

Wraps the training thread's extra work (the run's snapshots and rows, the probe and its parts,
the embeddings' copy) with timers and prints each one's share of the training's wall time, beside
the time in the trainer's own steps. The wrapped functions are the app's own, unchanged.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    args = parser.parse_args()
    import bench_gui

    import explorer.analysis.embeddings as embeddings
    import explorer.analysis.probe as probe
    import explorer.training.engine as engine
    from explorer.runs.writer import RunWriter

    timed(engine.Trainer, "_step", "trainer steps")
    timed(engine.Trainer, "_evaluate", "evaluations")
    timed(RunWriter, "snapshot", "run snapshots (write + fsync)")
    timed(RunWriter, "write_row", "run rows")
    timed(probe, "probe", "probe (whole)")
    timed(probe, "parameter_gradient_norms", "probe: parameter gradients (2nd autograd pass)")
    timed(probe, "gradient_norms_per_layer", "probe: hidden-state gradients")
    timed(embeddings, "embedding_matrices", "probe: embeddings copy")
    started = time.perf_counter()
    result = bench_gui.app_run(args.steps)
    wall = time.perf_counter() - started
    print(f"in-app training: {result['tokens_per_s']:,.0f} tokens/s, {wall:.1f} s wall, "
          f"load {os.getloadavg()[0]:.1f}")
    for label, seconds in sorted(SPENT.items(), key=lambda item: -item[1]):
        print(f"  {label:48s} {seconds:7.2f} s  {100 * seconds / wall:5.1f}%  ({CALLS[label]} calls)")


if __name__ == "__main__":
    main()
