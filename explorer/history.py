"""A training's history as metrics.jsonl rows hold it, and whether a folder is a run: what
checkpoints (explorer/training/) and run folders (explorer/runs/) share, so it sits below both.
Imports nothing heavy."""

from __future__ import annotations

import json
from pathlib import Path

CONFIG_FILE = "config.json"
SNAPSHOTS_DIR = "snapshots"
EVAL_KEYS = ("step", "val_loss", "perplexity", "token_accuracy", "bleu")


def is_run_folder(folder: str | Path) -> bool:
    """A folder a RunWriter wrote (its config.json has a run section, or it has snapshots)."""
    folder = Path(folder)
    if (folder / SNAPSHOTS_DIR).is_dir():
        return True
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "run" in config


def bad_lines_note(numbers) -> str | None:
    """"line 21 is not a JSON object, skipped" for the damaged lines of a metrics.jsonl (what
    decode, score, export, train --resume and the app's curves say); None for none."""
    numbers = list(numbers)
    if not numbers:
        return None
    named = ", ".join(map(str, numbers[:5])) + (
        f" and {len(numbers) - 5} more" if len(numbers) > 5 else "")
    if len(numbers) == 1:
        return f"line {named} is not a JSON object, skipped"
    return f"lines {named} are not JSON objects, skipped"


def live_rows(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(step rows, evaluation rows) as they stand after every resume: a training resumed at
    step s replaces whatever an earlier one wrote after s."""
    steps: list[dict] = []
    evals: list[dict] = []
    for row in rows:
        event = row.get("event")
        if event is None:
            steps.append(row)
            if row.get("val_loss") is not None:  # a plain checkpoint's merged row
                evals.append(row)
        elif event == "eval":
            evals.append(row)
        elif event == "resumed":
            cut = row.get("step") or 0
            if steps and steps[-1]["step"] > cut:
                steps = [r for r in steps if r["step"] <= cut]
            if evals and evals[-1]["step"] > cut:
                evals = [r for r in evals if r["step"] <= cut]
    return steps, evals


def history_from_rows(rows: list[dict], upto: int | None = None) -> list[dict]:
    """metrics.jsonl rows (a run's or a checkpoint's) in a Workspace's history format: one row
    per step, its evaluation's fields merged in, events left out."""
    steps, evals = live_rows(rows)
    by_step = {r["step"]: dict(r) for r in steps if upto is None or r["step"] <= upto}
    for row in evals:
        if row["step"] in by_step:
            by_step[row["step"]].update(
                {k: row[k] for k in EVAL_KEYS[1:] if row.get(k) is not None})
    return [by_step[s] for s in sorted(by_step)]
