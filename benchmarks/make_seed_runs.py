"""The lecture notes' three comparisons as recorded runs, for the app's "Compare runs" panel.

    python benchmarks/make_seed_runs.py [--out seed-runs] [--quick] [--steps N]

trains, with `explorer train --out` (in this process, through the CLI's own entry point), seven
run folders under --out:

    gradflow-rnn, gradflow-gru, gradflow-lstm   RNN language models, same size and data, on the
        `brackets` task (a bracket or quote opened many characters earlier must be closed): the
        notes' vanishing gradient. After training, ||dl_T/dh_t|| for every time step t of a long
        validation line (the loss at the last step only, explorer.analysis.probe.compare_cells),
        for the untrained (snapshot of step 0) and the trained model.
    attention-additive, attention-none          GRU seq2seq with Bahdanau attention and without
        (the thought-vector bottleneck) on `reverse`: the BLEU gap.
    transformer-prenorm, transformer-postnorm   the same Transformer with norm_first true and
        false on `reverse`, no warm-up: the notes' "pre-norm is more effective".

It prints one JSON summary on stdout and writes it, with a markdown table and the per-time-step
gradient norms as CSV, to --out: summary.json, summary.md, gradient_flow.csv. Open the folders
in the app (View > Compare runs, "Add run…" or drop them on the panel) to overlay the curves and
set two runs' attention side by side. The defaults take a few minutes on 2 CPU cores with one
thread; --quick (a few steps each) takes seconds and is what tests/runs/test_seed_runs.py runs.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GRADIENT_TOKENS = 100  # time steps the gradient flow is measured over
DISTANCES = (10, 25, 50)  # k of ||dl_T/dh_(T-k)|| / ||dl_T/dh_T|| in the table
REACH_FLOOR = 1e-3  # "reach": how many steps back ||dl_T/dh_t|| stays above this share of t = T
CELLS = ("rnn", "gru", "lstm")


def run_sets() -> dict[str, list[str]]:
    """Run name -> `explorer train` flags (without --out and the shared ones)."""
    runs = {f"gradflow-{cell}": ["--task", "brackets", "--arch", "rnn-lm", "--cell", cell]
            for cell in CELLS}
    for attention in ("additive", "none"):
        runs[f"attention-{attention}"] = ["--task", "reverse", "--arch", "seq2seq", "--cell", "gru",
                                          "--attention", attention]
    for name in ("prenorm", "postnorm"):
        runs[f"transformer-{name}"] = ["--task", "reverse", "--arch", "transformer"]
    return runs


def shared_flags(steps: int) -> list[str]:
    """Six evaluations and snapshots a run, one seed, one CPU thread."""
    every = max(steps // 6, 1)
    return ["--steps", str(steps), "--eval-every", str(every), "--snapshot-every", str(every),
            "--seed", "0", "--threads", "1", "--device", "cpu"]


def write_config(out: Path, name: str, quick: bool) -> Path:
    """The --config file of a run: the options no flag sets (norm_first, evaluation sizes)."""
    options = {"bleu_examples": 20 if quick else 200, "eval_examples": 32 if quick else 256}
    if name.startswith("transformer-"):
        options["norm_first"] = name.endswith("prenorm")
    path = out / "configs" / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(options, indent=2) + "\n", encoding="utf-8")
    return path


def train(out: Path, name: str, flags: list[str], quick: bool) -> float:
    """One `explorer train --out OUT/NAME`; -> wall seconds. Its output goes to stderr."""
    from explorer.cli import main

    argv = ["train", *flags, "--config", str(write_config(out, name, quick)),
            "--out", str(out / name)]
    print(f"== explorer {' '.join(argv)}", file=sys.stderr)
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"make_seed_runs: explorer train for {name} exited with {code}")
    return time.perf_counter() - started


# -- what the runs show ------------------------------------------------------------------------


def final_metrics(folder: Path) -> dict:
    """The last evaluation's numbers and the mean of the last tenth of the train losses."""
    from explorer.runs import RunReader

    reader = RunReader(folder)
    reader.read_new()
    curves = reader.curves()
    losses = curves.train["loss"]
    tail = losses[-max(len(losses) // 10, 1):]
    evals = curves.eval

    def last(key):
        values = evals.get(key)
        if values is None or not len(values) or not math.isfinite(values[-1]):
            return None
        return round(float(values[-1]), 4)

    return {"steps": int(curves.train["step"][-1]) if len(losses) else 0,
            "final_train_loss": round(float(tail.mean()), 4) if len(tail) else None,
            "final_val_loss": last("val_loss"), "final_token_accuracy": last("token_accuracy"),
            "final_bleu": last("bleu")}


def gradient_flow(folder: Path, cell: str) -> dict:
    """||dl_T/dh_t|| for t = 1..T on one long validation line, untrained (step 0) and trained."""
    from explorer.analysis.gradients import cell_comparison_ids
    from explorer.analysis.probe import compare_cells
    from explorer.runs import layout
    from explorer.training.checkpoint import load_checkpoint

    trained = load_checkpoint(folder, load_state=False)
    text = max((source for source, _ in trained.data.val), key=len)
    ids = cell_comparison_ids(trained.tokenizer, text, GRADIENT_TOKENS + 1)
    vocab = trained.model.config.vocab_size
    result = {"text": text[:GRADIENT_TOKENS]}
    for label, path in (("initial", layout.snapshot_dir(folder, 0)), ("trained", folder)):
        model = load_checkpoint(path, load_data=False, load_state=False).model
        norms = compare_cells(ids, vocab, cells=(cell,), trained={cell: model})[cell]
        result[label] = [float(n) for n in norms]
        result[f"{label}_ratio_first_last"] = float(norms[0] / norms[-1]) if norms[-1] else None
        result[f"{label}_reach"] = reach(norms)
        result[f"{label}_ratio_at"] = {str(k): float(norms[-1 - k] / norms[-1])
                                       for k in DISTANCES if norms[-1]}
    return result


def reach(norms) -> int:
    """Steps back from T before ||dl_T/dh_t|| first falls below REACH_FLOOR x ||dl_T/dh_T||."""
    below = [t for t in range(len(norms)) if norms[t] < REACH_FLOOR * norms[-1]]
    return len(norms) - 1 - below[-1] if below else len(norms) - 1


def summarise(out: Path, runs: dict[str, list[str]], seconds: dict[str, float]) -> dict:
    summary = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
               "python": platform.python_version(), "runs": {}, "gradient_flow": {}}
    for name in runs:
        summary["runs"][name] = {**final_metrics(out / name), "wall_s": round(seconds[name], 1),
                                 "folder": str(out / name)}
    for cell in CELLS:
        flow = gradient_flow(out / f"gradflow-{cell}", cell)
        summary["gradient_flow"][cell] = flow
    with_attention = summary["runs"]["attention-additive"]["final_bleu"]
    without = summary["runs"]["attention-none"]["final_bleu"]
    summary["bleu_with_attention"] = with_attention
    summary["bleu_without_attention"] = without
    summary["bleu_gap"] = (None if with_attention is None or without is None
                           else round(with_attention - without, 2))
    summary["gradient_ratio_first_last"] = {
        cell: {"initial": flow["initial_ratio_first_last"],
               "trained": flow["trained_ratio_first_last"],
               "initial_reach": flow["initial_reach"], "trained_reach": flow["trained_reach"],
               "initial_at": flow["initial_ratio_at"], "trained_at": flow["trained_ratio_at"]}
        for cell, flow in summary["gradient_flow"].items()}
    pre, post = summary["runs"]["transformer-prenorm"], summary["runs"]["transformer-postnorm"]
    summary["prenorm_vs_postnorm"] = {
        "val_loss": [pre["final_val_loss"], post["final_val_loss"]],
        "bleu": [pre["final_bleu"], post["final_bleu"]]}
    return summary


def markdown(summary: dict) -> str:
    def cell(value):
        if value is None:
            return "–"
        return f"{value:.3g}" if isinstance(value, float) and abs(value) < 1e-2 else str(value)

    lines = ["| run | steps | final train loss | final val loss | token accuracy | BLEU | wall s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, run in summary["runs"].items():
        lines.append(f"| {name} | {run['steps']} | {cell(run['final_train_loss'])} | "
                     f"{cell(run['final_val_loss'])} | {cell(run['final_token_accuracy'])} | "
                     f"{cell(run['final_bleu'])} | {run['wall_s']} |")
    lines += ["", f"BLEU with attention {cell(summary['bleu_with_attention'])}, without "
              f"{cell(summary['bleu_without_attention'])} (gap {cell(summary['bleu_gap'])}).", "",
              f"‖∂l_T/∂h_(T−k)‖ / ‖∂l_T/∂h_T‖ over T = {GRADIENT_TOKENS} steps "
              "(k = T−1: the first step), untrained → trained:", "",
              "| cell | " + " | ".join(f"k = {k}" for k in (*DISTANCES, GRADIENT_TOKENS - 1))
              + " | reach |", "|---|" + "---:|" * (len(DISTANCES) + 2)]
    for name, ratios in summary["gradient_ratio_first_last"].items():
        at = [f"{ratios['initial_at'][str(k)]:.2g} → {ratios['trained_at'][str(k)]:.2g}"
              for k in DISTANCES]
        lines.append(f"| {name} | {' | '.join(at)} | {ratios['initial']:.2g} → "
                     f"{ratios['trained']:.2g} | {ratios['initial_reach']} → "
                     f"{ratios['trained_reach']} |")
    lines.append(f"\nreach: steps back from T before the norm falls below {REACH_FLOOR:g} of its "
                 "value at T.")
    return "\n".join(lines) + "\n"


def write_gradient_csv(path: Path, flows: dict) -> None:
    columns = [(f"{cell}_{label}", flow[label]) for cell, flow in flows.items()
               for label in ("initial", "trained")]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["t", *[name for name, _ in columns]])
        for t in range(len(columns[0][1])):
            writer.writerow([t + 1, *[values[t] for _, values in columns]])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("seed-runs"),
                        help="folder for the seven run folders and the summary (default: "
                             "seed-runs); it must not hold these runs yet")
    parser.add_argument("--quick", action="store_true",
                        help="a few steps per run: seconds, for tests (the numbers mean nothing)")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps per run (default: 1500, --quick: 12)")
    args = parser.parse_args(argv)
    steps = args.steps or (12 if args.quick else 1500)
    out = args.out
    runs = run_sets()
    taken = [name for name in runs if (out / name).exists()]
    if taken:
        print(f"make_seed_runs: error: {out} already holds {', '.join(taken)}; choose another "
              "--out", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    seconds = {name: train(out, name, [*flags, *shared_flags(steps)], args.quick)
               for name, flags in runs.items()}
    summary = summarise(out, runs, seconds)
    summary["steps"], summary["quick"] = steps, args.quick
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(markdown(summary), encoding="utf-8")
    write_gradient_csv(out / "gradient_flow.csv", summary["gradient_flow"])
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
