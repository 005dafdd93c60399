"""CSV and JSON writers for panel data. A table is `(header, rows)`: what `Panel.tables()` returns."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Sequence

import numpy as np

from explorer.durable import replace_file, write_text_file

Table = tuple[list[str], list[list]]


def safe_name(text: str) -> str:
    """A file-name part: lower case letters, digits, '-' and '_' only."""
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", text.strip().lower()).strip("_")
    return cleaned or "plot"


def _cell(value):
    """Numbers keep full precision (repr round-trips floats); everything else is text."""
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def write_csv(path: str | Path, header: Sequence[str], rows: Sequence[Sequence]) -> Path:
    """Write one table (explorer.durable.replace_file: a symlink at the name is replaced, not
    followed); the parent folder must exist. Returns the path written."""
    def write(temporary: Path) -> None:
        with temporary.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(list(header))
            for row in rows:
                writer.writerow([_cell(v) for v in row])

    return replace_file(path, write)


def matrix_table(
    matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str], corner: str = ""
) -> Table:
    """A labelled matrix as a table: the first column holds row labels, the header column labels."""
    matrix = np.asarray(matrix)
    if matrix.shape != (len(row_labels), len(col_labels)):
        raise ValueError(
            f"matrix {matrix.shape} does not match {len(row_labels)} x {len(col_labels)} labels"
        )
    header = [corner, *[str(c) for c in col_labels]]
    rows = [[str(label), *matrix[i].tolist()] for i, label in enumerate(row_labels)]
    return header, rows


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def write_json(path: str | Path, data) -> Path:
    """Write `data` (dicts, lists, numbers, numpy arrays) as indented JSON."""
    return write_text_file(path, json.dumps(_jsonable(data), indent=2) + "\n")
