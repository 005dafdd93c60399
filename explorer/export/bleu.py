"""The BLEU panel's tables without Qt: the BLEU curve of a workspace's history with the app's
evaluation, and the n-gram breakdown (explorer.metrics.bleu). The panel's CSV export and
`explorer export --plots bleu --format csv` both call these."""

from __future__ import annotations

import numpy as np

from explorer.export.curves import upserted
from explorer.export.tables import Table

MAX_ORDER = 4  # BLEU's n-grams: 1 to 4


def bleu_history(history) -> np.ndarray:
    """(N, 2) rows of (step, bleu): the evaluations of metrics.jsonl rows that scored BLEU."""
    rows = [(row["step"], row["bleu"]) for row in history or []
            if row.get("bleu") is not None and "step" in row]
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def with_evaluation(rows: np.ndarray, metrics) -> np.ndarray | None:
    """`rows` with an evaluation's BLEU (an events.EvalMetrics) in step order, or None when it
    adds nothing: no BLEU, or a re-evaluation of the last step shown."""
    if metrics.bleu is None or (len(rows) and rows[-1, 0] == metrics.step):
        return None
    return upserted(rows, (metrics.step, metrics.bleu))


def bleu_tables(history: np.ndarray, breakdown) -> dict[str, Table]:
    """`bleu` (the curve), and with a breakdown (explorer.metrics.bleu.BleuBreakdown) its n-gram
    precisions (`breakdown`) and brevity penalty (`summary`)."""
    tables = {"bleu": (["step", "bleu"], history.tolist())}
    if breakdown is not None:
        b = breakdown
        rows = [[n + 1, int(b.counts[n]), int(b.totals[n]), float(b.precisions[n])]
                for n in range(MAX_ORDER)]
        tables["breakdown"] = (["n", "clipped_matches", "hypothesis_ngrams", "precision"], rows)
        tables["summary"] = (["bleu", "bp", "sys_len", "ref_len"], [[b.score, b.bp, b.sys_len, b.ref_len]])
    return tables
