"""Comparing runs: several run folders' curves on one axis, and two runs' attention on one input.

    run = load_run("runs/gru")                   # RunCurves: name, config summary, metric series
    header, rows = metric_table([a, b], "bleu")  # step + one column per run, for a CSV
    views = compare_attention([("runs/gru", "gru", None), ("runs/lstm", "lstm", 200)], "abc", "cba")
    beams = compare_beams([("runs/gru", "gru", None), ("runs/lstm", "lstm", None)], "abc")

Qt-free: the app's "Compare runs" panel (explorer/ui/panels/runs.py) and
benchmarks/make_seed_runs.py use it. `compare_attention` and `compare_beams` load checkpoints and
run the models, so the panel calls them in a background job; everything they return is numpy and
strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from explorer.errors import UserError
from explorer.history import is_run_folder
from explorer.runs import layout
from explorer.runs.reader import EVAL_KEYS, TRAIN_KEYS, Curves, RunReader, _columns, live_rows

# metric key in metrics.jsonl -> (what the user reads, "train" for step rows or "eval")
METRICS: dict[str, tuple[str, str]] = {
    "loss": ("train loss", "train"),
    "val_loss": ("validation loss", "eval"),
    "bleu": ("BLEU", "eval"),
    "perplexity": ("validation perplexity", "eval"),
    "token_accuracy": ("token accuracy", "eval"),
    "grad_norm": ("gradient norm (before clipping)", "train"),
    "grad_norm_clipped": ("gradient norm (after clipping)", "train"),
    "lr": ("learning rate", "train"),
    "tokens_per_s": ("tokens/s", "train"),
}
THIS_WINDOW = "this window"  # the run of the model open in the window (the Compare runs panel)
ATTENTION_KINDS = ("cross", "decoder", "encoder")  # the first a model has is compared
KIND_NAMES = {"cross": "cross-attention", "decoder": "decoder self-attention",
              "encoder": "encoder self-attention"}


@dataclass
class RunCurves:
    """What the overlay draws of one run: metric key -> (steps, values), finite values only."""

    name: str
    summary: str = ""
    series: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def metrics(self) -> list[str]:
        return [key for key in METRICS if key in self.series]


def check_run_folder(folder: str | Path) -> Path:
    """The folder, or a one-line UserError saying why it is not a run."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder")
    if not (is_run_folder(folder) or (folder / layout.METRICS_FILE).is_file()):
        raise UserError(f"{folder}: not a run folder (no {layout.METRICS_FILE}, no run section "
                        f"in {layout.CONFIG_FILE}, no {layout.SNAPSHOTS_DIR}/)")
    return folder


def curves_from_rows(rows: list[dict]) -> Curves:
    """metrics.jsonl rows (a run's, or the app's own training as rows) as plot columns."""
    steps, evals = live_rows(rows)
    return Curves(train=_columns(steps, TRAIN_KEYS), eval=_columns(evals, EVAL_KEYS))


def metric_series(curves: Curves) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """metric key -> (steps, values) for every metric with at least one finite value."""
    series = {}
    for key, (_, source) in METRICS.items():
        columns = curves.train if source == "train" else curves.eval
        if key not in columns or not len(columns[key]):
            continue
        values = columns[key]
        keep = np.isfinite(values)
        if keep.any():
            series[key] = (columns["step"][keep], values[keep])
    return series


def config_summary(config: dict[str, Any]) -> str:
    """A short description of a run's model: "seq2seq, gru, additive attention", "transformer,
    post-norm, 2 layers", "rnn-lm, lstm"."""
    model = config.get("model") or {}
    family = model.get("family")
    if not family:
        return ""
    parts = [family]
    if model.get("cell"):
        parts.append(model["cell"])
    if "attention" in model:
        parts.append("no attention" if model["attention"] == "none"
                     else f"{model['attention']} attention")
    if "norm_first" in model:
        parts.append("pre-norm" if model["norm_first"] else "post-norm")
    if model.get("num_layers"):
        layers = model["num_layers"]
        parts.append(f"{layers} layer{'s' if layers != 1 else ''}")
    return ", ".join(parts)


def run_name(folder: str | Path) -> str:
    return Path(folder).resolve().name or str(folder)


def load_run(folder: str | Path) -> tuple[RunReader, RunCurves]:
    """Read a run folder as far as it is written (a UserError for one that is not a run)."""
    folder = check_run_folder(folder)
    reader = RunReader(folder)
    reader.read_new()
    curves = RunCurves(run_name(folder), config_summary(reader.config()),
                       metric_series(reader.curves()))
    return reader, curves


def eval_record(metrics) -> dict[str, Any]:
    """An events.EvalMetrics as a metrics.jsonl row (what the app's own run records)."""
    row = {"event": "eval", "step": metrics.step, "val_loss": metrics.val_loss,
           "perplexity": metrics.perplexity, "token_accuracy": metrics.token_accuracy}
    if metrics.bleu is not None:
        row["bleu"] = metrics.bleu
    return row


def first_metric(runs: Sequence[RunCurves], current: str | None = "loss") -> str | None:
    """The metric the panel shows: `current` if any run recorded it, else the first METRICS key
    one did (None: no run recorded any)."""
    recorded = [key for key in METRICS if any(key in run.series for run in runs)]
    return current if current in recorded else (recorded[0] if recorded else None)


def metric_table(runs: Sequence[RunCurves], metric: str) -> tuple[list[str], list[list]]:
    """(["step", run names...], rows): every step any run recorded `metric` at, ascending, with
    each run's value there or "" where it has none."""
    header = ["step", *[run.name for run in runs]]
    by_run = []
    steps: set[int] = set()
    for run in runs:
        found = run.series.get(metric)
        values = {} if found is None else dict(zip(found[0].tolist(), found[1].tolist()))
        by_run.append(values)
        steps.update(values)
    rows = [[step, *[values.get(step, "") for values in by_run]] for step in sorted(steps)]
    return header, rows


# -- two runs' attention on the same input ----------------------------------------------------


@dataclass
class AttentionView:
    """One run's attention on the compared input: (queries, keys) with token labels, or why not."""

    run: str
    step: int
    title: str
    matrix: np.ndarray | None = None  # (Tq, Tk), the mean of the heads
    rows: list[str] = field(default_factory=list)
    cols: list[str] = field(default_factory=list)
    message: str = ""  # why there is no matrix (a model without attention, a missing snapshot)


@dataclass
class AttentionComparison:
    source: str
    target: str  # "" when each model's own greedy output was used
    views: list[AttentionView]


def checkpoint_of(folder: str | Path, step: int | None) -> Path:
    """The run's latest checkpoint (the folder itself) or its snapshot at `step`."""
    path = Path(folder) if step is None else layout.snapshot_dir(folder, step)
    if not (path / layout.CONFIG_FILE).is_file():
        what = "latest checkpoint" if step is None else f"snapshot of step {step}"
        raise UserError(f"{path}: no {what} (deleted, or not written yet?)")
    return path


def _pick(attention: list) -> object | None:
    """The map to compare: the first kind of ATTENTION_KINDS the model has, its last layer."""
    for kind in ATTENTION_KINDS:
        maps = [a for a in attention if a.kind == kind]
        if maps:
            return max(maps, key=lambda a: a.layer)
    return None


def own_output(workspace, source: str) -> str:
    """The model's greedy output for `source`: the target its attention is shown on when the
    user gives none."""
    from explorer.decoding.scoring import encode_context
    from explorer.decoding.search import greedy

    return greedy(workspace.model, encode_context(workspace, source), max_len=64,
                  tokenizer=workspace.tokenizer).text


def run_attention(folder: str | Path, name: str, step: int | None, source: str,
                  target: str) -> AttentionView:
    """`name`'s attention (at `step`, None = the latest checkpoint) on (source, target),
    teacher-forced; a blank target is the model's own greedy output."""
    from explorer.analysis.probe import probe
    from explorer.families import family_of
    from explorer.training.checkpoint import load_checkpoint

    workspace = load_checkpoint(checkpoint_of(folder, step), load_data=False, load_state=False)
    family = family_of(workspace.model)
    if not target and family.has_source:
        target = own_output(workspace, source)
    title = f"{name} · step {workspace.step}"
    try:
        snapshot = probe(workspace, source, target, workspace.step)
    except ValueError as exc:
        return AttentionView(name, workspace.step, title, message=str(exc))
    chosen = _pick(snapshot.attention)
    if chosen is None:
        what = ("a seq2seq model without attention reads only the encoder's last state"
                if family.has_source and family.recurrent else f"{family.name} models compute none")
        return AttentionView(name, workspace.step, title, message=f"{title}: no attention ({what})")
    heads = chosen.weights.shape[0]
    matrix = chosen.weights.mean(axis=0)  # (H, Tq, Tk) -> (Tq, Tk)
    layer = f", layer {chosen.layer + 1}" if chosen.layer or heads > 1 else ""
    mean = f", mean of {heads} heads" if heads > 1 else ""
    return AttentionView(name, workspace.step,
                         f"{title} · {KIND_NAMES[chosen.kind]}{layer}{mean}",
                         matrix.astype(np.float32), list(chosen.rows), list(chosen.cols))


def default_input(folder: str | Path) -> tuple[str, str]:
    """A validation example of the run's data (its first), else a fixed phrase."""
    from explorer.analysis.probe_input import default_probe_input
    from explorer.training.checkpoint import load_checkpoint

    return default_probe_input(load_checkpoint(checkpoint_of(folder, None), load_state=False))


def compare_attention(sides: Sequence[tuple[str | Path, str, int | None]], source: str = "",
                      target: str = "") -> AttentionComparison:
    """Each (folder, name, step)'s attention on the same input. Without a source, the first
    run's first validation example (source and target) is used. A side that fails (a deleted
    snapshot) says why in its view; the other is still shown."""
    if not source.strip():
        source, target = default_input(sides[0][0])
    views = []
    for folder, name, step in sides:
        try:
            views.append(run_attention(folder, name, step, source, target))
        except UserError as exc:
            views.append(AttentionView(name, -1 if step is None else step, name,
                                       message=f"{name}: {exc}"))
    return AttentionComparison(source, target, views)


# -- two runs' beam search on the same source ----------------------------------------------------


@dataclass
class BeamView:
    """One run's beam search on the compared source (explorer.decoding.types.BeamResult), or why
    there is none."""

    run: str
    step: int
    title: str
    result: object | None = None  # BeamResult
    message: str = ""
    best: str = ""  # the best hypothesis and its score, one line


@dataclass
class BeamComparison:
    source: str
    views: list[BeamView]


def run_beam(folder: str | Path, name: str, step: int | None, source: str,
             beam_size: int = 4) -> BeamView:
    """`name`'s beam search (at `step`, None = the latest checkpoint) on `source`, with the greedy
    path, as the beam tree panel decodes it."""
    from explorer.decoding.jobs import run_beam_search
    from explorer.decoding.settings import DecodeSettings
    from explorer.training.checkpoint import load_checkpoint

    workspace = load_checkpoint(checkpoint_of(folder, step), load_data=False, load_state=False)
    title = f"{name} · step {workspace.step}"
    result = run_beam_search(workspace, source, DecodeSettings(beam_size=beam_size))
    best = result.best
    return BeamView(name, workspace.step, title, result,
                    best=f"beam {beam_size}: best {best.text!r}, log p {best.score:.2f}")


def compare_beams(sides: Sequence[tuple[str | Path, str, int | None]], source: str = "",
                  beam_size: int = 4) -> BeamComparison:
    """Each (folder, name, step)'s beam search on the same source (blank: the first run's first
    validation source). A side that fails says why in its view."""
    if not source.strip():
        source = default_input(sides[0][0])[0]
    views = []
    for folder, name, step in sides:
        try:
            views.append(run_beam(folder, name, step, source, beam_size))
        except UserError as exc:
            views.append(BeamView(name, -1 if step is None else step, name,
                                  message=f"{name}: {exc}"))
    return BeamComparison(source, views)


# -- every compared run on the same examples (the length plot's lines) ---------------------------


def evaluate_runs(runs: dict[str, str | Path], pairs, seq2seq: bool, should_stop=None
                  ) -> tuple[dict[str, tuple[str, object]], list[str]] | None:
    """Each run's latest checkpoint evaluated on `pairs` (the open model's examples): {name:
    (label, ExampleTable)} in the runs' order, and one line for each run that could not be (a
    language model beside translation models, a deleted checkpoint). None when stopped."""
    from explorer.analysis.examples import evaluate_examples
    from explorer.training.checkpoint import load_checkpoint

    tables, problems = {}, []
    for name, folder in runs.items():
        try:
            workspace = load_checkpoint(checkpoint_of(folder, None), load_data=False,
                                        load_state=False)
            if workspace.is_seq2seq != seq2seq:
                raise UserError("another kind of model (translation against language model)")
            table = evaluate_examples(workspace, pairs, should_stop=should_stop)
        except UserError as exc:
            problems.append(f"{name}: {exc}")
            continue
        if table is None:
            return None
        tables[name] = (f"{name} · step {workspace.step}", table)
    return tables, problems
