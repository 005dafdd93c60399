"""The training curves as rows, without Qt: what the curves panel draws and exports, and what
`explorer export --plots curves --format csv` writes with no panel at all (export/headless.py)."""

from __future__ import annotations

import math

import numpy as np

TRAIN_COLUMNS = ("step", "loss", "perplexity", "lr", "grad_norm", "grad_norm_clipped")
EVAL_COLUMNS = ("step", "val_loss", "perplexity", "token_accuracy")


def perplexity(loss: float) -> float:
    return math.exp(min(loss, 50.0))  # exp overflows past ~709; e^50 is already off any useful axis


def history_rows(history) -> tuple[np.ndarray, np.ndarray]:
    """metrics.jsonl rows (a workspace's history) as rows of TRAIN_COLUMNS (a training step: it
    has "loss") and EVAL_COLUMNS (an evaluation: it has "val_loss")."""
    train, evals = [], []
    for row in history or []:
        if "step" not in row:
            continue
        if row.get("loss") is not None:
            grad = row.get("grad_norm", math.nan)
            train.append((row["step"], row["loss"], perplexity(row["loss"]),
                          row.get("lr", math.nan), grad, row.get("grad_norm_clipped", grad)))
        if row.get("val_loss") is not None:
            evals.append((row["step"], row["val_loss"],
                          row.get("perplexity", perplexity(row["val_loss"])),
                          row.get("token_accuracy", math.nan)))
    return (np.array(train, dtype=np.float64).reshape(-1, len(TRAIN_COLUMNS)),  # (N, 6)
            np.array(evals, dtype=np.float64).reshape(-1, len(EVAL_COLUMNS)))  # (M, 4)


def eval_row(metrics) -> tuple:
    """An evaluation (events.EvalMetrics) as a row of EVAL_COLUMNS."""
    return metrics.step, metrics.val_loss, metrics.perplexity, metrics.token_accuracy


def curve_tables(train: np.ndarray, evals: np.ndarray) -> dict[str, tuple[list[str], list[list]]]:
    """The curves panel's tables (`curves_train.csv`, `curves_validation.csv`)."""
    return {"train": (list(TRAIN_COLUMNS), train.tolist()),
            "validation": (list(EVAL_COLUMNS), evals.tolist())}


def upserted(rows: np.ndarray, row) -> np.ndarray:
    """`rows` (N, C) with `row` put in order of its first column (the step), as a new array: it
    replaces a row of the same step (a re-evaluation), goes between two (a snapshot evaluated
    later) or at the end."""
    at = int(np.searchsorted(rows[:, 0], row[0]))
    if at < len(rows) and rows[at, 0] == row[0]:
        rows = rows.copy()
        rows[at] = row
        return rows
    return np.insert(rows, at, row, axis=0)  # (N + 1, C)
