"""Issue 24's speed targets, on Multi30k with a demo-size Transformer checkpoint.

    python benchmarks/bench_examples.py --checkpoint DIR [--data /work/shared/data/multi30k]

1. Evaluating the 1,014 validation pairs (greedy, batched; loss, BLEU, chrF per example): < 10 s,
   and the GUI timer's p99 lateness while the Examples panel evaluates them: < 50 ms.
2. Sorting and filtering 100,000 rows in the panel's table model: < 100 ms.
3. Building the neighbour index over the 29,000 training pairs: < 30 s; one query: < 50 ms.

Each figure is the median of --repeat runs, wall and CPU (process) seconds, with the load average
beside it. The data is read where it lies, never copied.

    python benchmarks/bench_examples.py --checkpoint DIR --before OLD [--rounds 3]

times an older copy of the repository (OLD, e.g. from `git archive`) in pairs with this one: each
round runs both, one process each, in alternating order, so that a shared machine's load falls
on both alike; the table gives the medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("BENCH_ROOT") or Path(__file__).resolve().parent.parent)  # --before
sys.path.insert(0, str(ROOT))


def load() -> str:
    return open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"


RESULTS: dict[str, tuple[float, float]] = {}  # what -> median (wall s, CPU s), for --before


def median_time(fn, repeat: int, name: str | None = None, setup=None) -> tuple[float, list[float]]:
    """fn() `repeat` times; `setup()`, untimed, before each, gives fn its argument when set."""
    times, cpu = [], []
    for _ in range(repeat):
        given = () if setup is None else (setup(),)
        start, start_cpu = time.perf_counter(), time.process_time()
        fn(*given)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    if name:
        RESULTS[name] = (statistics.median(times), statistics.median(cpu))
    return statistics.median(times), times


def bench_evaluate(workspace, pairs, repeat: int) -> None:
    from explorer.analysis.examples import evaluate_examples

    from explorer.analysis.examples import summarize

    evaluate_examples(workspace, pairs[:64])  # warm-up
    tables = []
    median, times = median_time(lambda: tables.append(evaluate_examples(workspace, pairs)), repeat,
                                "evaluate")
    print(f"  {summarize(tables[-1]).format()}")
    print(f"evaluate {len(pairs)} pairs: median {median:.2f} s ({', '.join(f'{t:.2f}' for t in times)}) "
          f"CPU {RESULTS['evaluate'][1]:.2f} s; target < 10 s; load {load()}")


def bench_gui_lateness(workspace) -> None:
    """A 10 ms timer on the GUI thread while the Examples panel evaluates in its runner."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QElapsedTimer, QTimer
    from PySide6.QtWidgets import QApplication

    from explorer.ui.bus import AppBus
    from explorer.ui.panels.examples import ExamplesPanel

    app = QApplication.instance() or QApplication([])
    bus = AppBus()
    panel = ExamplesPanel(bus)
    panel.resize(1400, 900)
    panel.show()
    app.processEvents()
    gaps, clock, timer = [], QElapsedTimer(), QTimer()
    timer.setInterval(10)
    clock.start()
    last = [clock.elapsed()]

    def tick() -> None:
        now = clock.elapsed()
        gaps.append(now - last[0] - 10)
        last[0] = now

    timer.timeout.connect(tick)
    finished = []
    panel.evaluated.connect(lambda: finished.append(True))
    timer.start()
    started = time.perf_counter()
    bus.set_workspace(workspace)
    while not finished and time.perf_counter() - started < 300:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    gaps.sort()
    p99 = gaps[int(0.99 * (len(gaps) - 1))] if gaps else float("nan")
    print(f"GUI timer while the panel evaluates ({time.perf_counter() - started:.1f} s, {len(gaps)} "
          f"ticks): p99 lateness {p99:.1f} ms, max {gaps[-1] if gaps else 0:.1f} ms (target p99 < 50); "
          f"load {load()}")
    panel.shutdown()


def bench_table(repeat: int) -> None:
    import numpy as np
    from PySide6.QtCore import Qt

    from explorer.analysis.examples import ExampleTable, SliceFilter
    from explorer.ui.examples_model import ExamplesModel

    rng = np.random.default_rng(0)
    n = 100_000
    words = np.array(["a man in a blue shirt", "two dogs play in the snow", "a woman sings",
                      "people walk down the street", "a child jumps"], dtype=object)
    columns = {name: words[rng.integers(0, len(words), n)] for name in ("source", "reference", "output")}
    for name in ("loss", "loss_per_token", "token_accuracy", "bleu", "chrf"):
        columns[name] = rng.random(n)
    for name in ("source_length", "reference_length", "output_length"):
        columns[name] = rng.integers(1, 40, n)
    model = ExamplesModel()
    patterns = iter(f"dog|child|x{i}" for i in range(10**6))  # a new pattern each time: no cache

    def new_table():
        """A new table as the GUI thread gets it: prepared for sorting and filtering in the
        evaluation job (the job runner's thread), where this tree has `prepare`."""
        table = ExampleTable(dict(columns), True)
        return table.prepare() if hasattr(table, "prepare") else table

    def kept_state():  # untimed: the panel's filter and text sort, kept when a new table comes
        model.set_filter(SliceFilter({"source": next(patterns)}, min_length=5))
        model.sort(source, Qt.AscendingOrder)
        return new_table()

    def new_shown_table() -> None:  # untimed: a new table shown, unfiltered, sorted by BLEU
        model.set_filter(SliceFilter())
        model.sort(bleu, Qt.DescendingOrder)
        model.set_table(new_table())

    if hasattr(ExampleTable, "prepare"):
        median_time(lambda: ExampleTable(dict(columns), True).prepare(), repeat, "prepare")
        print(f"prepare 100k rows' texts (in the job runner, off the GUI thread): median "
              f"{RESULTS['prepare'][0] * 1000:.1f} ms, CPU {RESULTS['prepare'][1] * 1000:.1f} ms; "
              f"load {load()}")
    model.set_table(new_table())
    bleu, source = model.names.index("bleu"), model.names.index("source")
    for key, label, fn, setup in (
        ("sort", "sort 100k rows by BLEU", lambda: model.sort(bleu, Qt.DescendingOrder), None),
        ("arrive", "show a new table of 100k rows (a regex filter and a text sort kept)",
         model.set_table, kept_state),
        ("sort_text_first", "sort 100k rows by source text (first time on a table)",
         lambda _: model.sort(source, Qt.AscendingOrder), new_shown_table),
        ("sort_text", "sort 100k rows by source text (again)",
         lambda: model.sort(source, Qt.DescendingOrder), None),
        ("filter_first", "filter 100k rows (first time on a table)",
         lambda _: model.set_filter(SliceFilter({"source": next(patterns)}, min_length=5)),
         new_shown_table),
        ("filter", "filter 100k rows (a new regex + length)",
         lambda: model.set_filter(SliceFilter({"source": next(patterns)}, min_length=5)), None),
        ("filter_clear", "clear the filter on 100k rows", lambda: model.set_filter(SliceFilter()), None),
    ):
        median, _ = median_time(fn, repeat, key, setup)
        print(f"{label}: median {median * 1000:.1f} ms, CPU {RESULTS[key][1] * 1000:.1f} ms "
              f"(target < 100 ms); load {load()}")


def bench_neighbours(workspace, train_pairs, repeat: int, decoder: bool) -> None:
    import numpy as np

    from explorer.analysis.neighbours import build_index, nearest

    start, start_cpu = time.perf_counter(), time.process_time()
    index = build_index(workspace, train_pairs)
    built = time.perf_counter() - start
    RESULTS["index"] = (built, time.process_time() - start_cpu)
    print(f"neighbour index over {len(index)} pairs (encoder state): {built:.1f} s, CPU "
          f"{RESULTS['index'][1]:.1f} s (target < 30 s); load {load()}")
    rng = np.random.default_rng(0)
    picks = iter(rng.integers(0, len(train_pairs), repeat * 2))
    median, _ = median_time(lambda: nearest(workspace, index, *train_pairs[next(picks)]), repeat,
                            "query")
    print(f"neighbour query (forward pass + search): median {median * 1000:.1f} ms (target < 50 ms); "
          f"load {load()}")
    if decoder:
        start = time.perf_counter()
        index = build_index(workspace, train_pairs, "decoder", 3)
        print(f"neighbour index over {len(index)} pairs (decoder state, step 3): "
              f"{time.perf_counter() - start:.1f} s; load {load()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="a Multi30k Transformer checkpoint")
    parser.add_argument("--data", default="/work/shared/data/multi30k")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", default="evaluate,gui,table,neighbours")
    parser.add_argument("--decoder-index", action="store_true",
                        help="also time an index by decoder state (step 3)")
    parser.add_argument("--before", type=Path, help="an older copy of the repository, timed in pairs")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds with --before")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a round's child
    args = parser.parse_args()
    if args.before:
        return paired(args)
    import torch

    torch.set_num_threads(args.threads)
    from explorer.commands.model_args import load_workspace
    from explorer.data.readers import read_parallel

    workspace = load_workspace(args.checkpoint)
    data = Path(args.data)
    val = read_parallel(data / "val.de.gz", data / "val.en.gz")
    print(f"{sum(p.numel() for p in workspace.model.parameters()):,} parameters, {args.threads} "
          f"torch thread(s); load {load()}")
    only = args.only.split(",")
    if "evaluate" in only:
        bench_evaluate(workspace, val, args.repeat)
    if "gui" in only:
        workspace.data = type("Data", (), {"val": val, "train": []})()  # the panel's validation set
        bench_gui_lateness(workspace)
        workspace.data = None
    if "table" in only:
        bench_table(max(args.repeat, 7))
    if "neighbours" in only:
        train = read_parallel(data / "train.de.gz", data / "train.en.gz")
        bench_neighbours(workspace, train, max(args.repeat, 20), args.decoder_index)
    if args.json:
        print("RESULTS " + json.dumps(RESULTS))
    return 0


def paired(args) -> int:
    """--rounds rounds of this tree and --before, one process each, in alternating order."""
    import subprocess

    trees = {"before": args.before.resolve(), "after": Path(__file__).resolve().parent.parent}
    command = [sys.executable, __file__, "--checkpoint", args.checkpoint, "--data", args.data,
               "--repeat", str(args.repeat), "--threads", str(args.threads), "--only", args.only,
               "--json"]
    runs = {side: [] for side in trees}
    for round_ in range(args.rounds):
        for side in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
            out = subprocess.run(command, capture_output=True, text=True, check=True,
                                 env={**os.environ, "BENCH_ROOT": str(trees[side])}).stdout
            runs[side].append(json.loads(out.split("RESULTS ", 1)[1]))
            print(f"round {round_ + 1} {side}: " + ", ".join(
                f"{k} {w:.3f}/{c:.3f} s" for k, (w, c) in runs[side][-1].items())
                + f"; load {load()}", flush=True)
    print(f"\n| median of {args.rounds} rounds, {args.threads} torch thread(s) | before: wall / CPU s "
          "| after: wall / CPU s | after / before (CPU) |\n|---|---:|---:|---:|")
    for key in runs["after"][0]:
        cells = []
        for side in trees:  # a step one tree does not have (e.g. "prepare") is "-" there
            if key not in runs[side][0]:
                cells.append("-")
                continue
            wall = statistics.median(r[key][0] for r in runs[side])
            cpu = statistics.median(r[key][1] for r in runs[side])
            cells.append((wall, cpu))
        text = [cell if cell == "-" else f"{cell[0]:.3f} / {cell[1]:.3f}" for cell in cells]
        ratio = "-" if "-" in cells else f"{cells[1][1] / cells[0][1]:.2f}"
        print(f"| {key} | {text[0]} | {text[1]} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
