"""The attribution panel's tables without Qt (and its rollout view's): the map of an
AttributionResult (output tokens x source, then the marked target prefix) with its completeness
gaps, or every map of a RolloutResult. The panel's CSV export and `explorer export --plots
attribution,rollout --format csv` (explorer/export/headless.py) both call `attribution_tables`."""

from __future__ import annotations

from explorer.analysis.rollout import RolloutResult
from explorer.export.tables import Table, matrix_table


def column_labels(result) -> list[str]:
    """An AttributionResult's columns: source as it is, the prefix marked (›) so the boundary shows."""
    labels = []
    for name, side in result.sides:
        labels += [f"›{label}" if name == "prefix" and len(result.sides) > 1 else label for label in side]
    return labels


def attribution_tables(result) -> dict[str, Table]:
    """The tables of an AttributionResult or RolloutResult (None, or no maps: none)."""
    if isinstance(result, RolloutResult):
        return {m.name.replace(" → ", "_to_"): matrix_table(m.matrix, m.rows, m.columns, "row \\ column")
                for m in result.maps}
    if result is None:
        return {}
    tables = {"map": matrix_table(result.scores, result.rows, column_labels(result), "output \\ input")}
    if result.gap is not None:
        tables["completeness"] = (["output", "f(x)", "f(baseline)", "gap", "relative_gap"],
                                  [[row, result.target[r], result.baseline_target[r], result.gap[r],
                                    result.relative_gap[r]] for r, row in enumerate(result.rows)])
    return tables
