"""The compare panel's table without Qt: greedy, beam and sampling on one source, each with its
score and, against a reference, its sentence BLEU and matched n-grams. The panel's CSV export and
`explorer export --plots compare --format csv` (explorer/export/headless.py) both call these."""

from __future__ import annotations

from explorer.export.tables import Table


def opening_pair(workspace) -> tuple[str, str] | None:
    """What the panel compares on as it opens: the first validation (source, reference), or None
    (a model without data)."""
    data = getattr(workspace, "data", None)
    return tuple(data.val[0][:2]) if data is not None and data.val else None


def compare_tables(outputs) -> dict[str, Table]:
    """One row per decoding.jobs.StrategyOutput (none: no table)."""
    header = ["strategy", "text", "score", "normalized_score", "finished", "bleu", "bp",
              "p1", "p2", "p3", "p4", "matched_ngrams"]
    rows = []
    for o in outputs:
        b = o.bleu
        precisions = list(b.precisions) + [""] * (4 - len(b.precisions)) if b else [""] * 4
        matched = "; ".join(" ".join(tokens) for _, _, tokens in o.matched)
        rows.append([o.strategy, o.hypothesis.text, o.hypothesis.score,
                     o.hypothesis.normalized_score, o.hypothesis.finished,
                     b.score if b else "", b.bp if b else "", *precisions[:4], matched])
    return {"outputs": (header, rows)} if rows else {}
