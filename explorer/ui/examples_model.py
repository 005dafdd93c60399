"""A Qt table model over an ExampleTable's numpy columns: no item per cell, and sorting and
filtering are numpy operations on an index array (`view`), so 100,000 rows sort in milliseconds.

The model shows the rows `view` (indices into the table) in that order. Sorting permutes the
view with a stable argsort of the column; a filter (explorer.analysis.examples.SliceFilter)
recomputes the view from the table and re-applies the sort. A second table of the same examples
(a pinned baseline) adds a "change" column: this table's metric minus the baseline's.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from explorer.analysis.examples import TEXT_COLUMNS, ExampleTable, SliceFilter, compare

TEXT_WIDTH, MIN_TEXT_WIDTH, NUMBER_WIDTH = 280, 150, 78  # column widths in pixels

HEADERS = {
    "source": "source", "reference": "reference", "output": "output", "loss": "loss (nats)",
    "loss_per_token": "loss/token", "token_accuracy": "token acc.", "bleu": "BLEU", "chrf": "chrF",
    "perplexity": "perplexity", "source_length": "src len", "reference_length": "ref len",
    "output_length": "out len", "change": "change",
}
TOOLTIPS = {
    "loss": "teacher-forced -log p of the reference, <eos> included (explorer score)",
    "loss_per_token": "the loss divided by the reference's tokens (+ <eos>)",
    "token_accuracy": "share of reference tokens that were the model's argmax under teacher forcing",
    "bleu": "sacreBLEU sentence_bleu of the output against the reference",
    "chrf": "sacreBLEU sentence_chrf of the output against the reference",
    "change": "this evaluation minus the pinned one (BLEU up, or loss down, is better)",
}


def column_widths(names: list[str], available: int) -> list[int]:
    """Each column's width for a view `available` pixels wide: the numbers fit their values and
    the texts share what is left (each between MIN_TEXT_WIDTH and TEXT_WIDTH), so that on a
    narrow screen the scores stay in sight beside shortened texts (a text's tooltip is whole)."""
    texts = sum(name in TEXT_COLUMNS for name in names)
    share = (available - NUMBER_WIDTH * (len(names) - texts)) // max(texts, 1)
    text = max(MIN_TEXT_WIDTH, min(TEXT_WIDTH, share))
    return [text if name in TEXT_COLUMNS else NUMBER_WIDTH for name in names]


class ExamplesModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.table: ExampleTable | None = None
        self.view = np.zeros(0, dtype=np.int64)  # shown rows, as indices into the table
        self.filter = SliceFilter()
        self.sort_column: str | None = None
        self.descending = False
        self.change: np.ndarray | None = None  # per table row, against a pinned table

    # -- data ------------------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        if self.table is None:
            return []
        return list(self.table.names) + (["change"] if self.change is not None else [])

    def set_table(self, table: ExampleTable | None, pinned: ExampleTable | None = None) -> None:
        """Show `table`; the current filter must compile (the caller checked it)."""
        self.beginResetModel()
        self.table = table
        self.change = None
        if table is not None and pinned is not None:
            try:
                self.change = compare(pinned, table).change
            except Exception:  # noqa: BLE001 - other examples: no change column, said by the panel
                self.change = None
        self.view = self._rows()
        self._sort_view()
        self.endResetModel()

    def values(self, name: str) -> np.ndarray:
        return self.change if name == "change" else self.table.columns[name]

    def set_filter(self, slice_filter: SliceFilter) -> None:
        """Raises UserError for a pattern that does not compile; the view is then unchanged."""
        rows = self._rows(slice_filter)
        self.beginResetModel()
        self.filter = slice_filter
        self.view = rows
        self._sort_view()
        self.endResetModel()

    def _rows(self, slice_filter: SliceFilter | None = None) -> np.ndarray:
        if self.table is None:
            return np.zeros(0, dtype=np.int64)
        return (slice_filter or self.filter).rows(self.table)

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        names = self.names
        if not 0 <= column < len(names):
            return
        self.layoutAboutToBeChanged.emit()
        self.sort_column = names[column]
        self.descending = order == Qt.DescendingOrder
        self._sort_view()
        self.layoutChanged.emit()

    def sort_by(self, name: str | None, descending: bool) -> None:
        if name in self.names:
            self.sort(self.names.index(name), Qt.DescendingOrder if descending else Qt.AscendingOrder)

    def _sort_view(self) -> None:
        if self.table is None or self.sort_column not in self.names:
            return
        keys = self._sort_key(self.sort_column)[self.view]
        order = np.argsort(keys, kind="stable")
        if self.descending:  # stable descending: reverse the ascending order of reversed rows
            order = len(keys) - 1 - np.argsort(keys[::-1], kind="stable")[::-1]
        self.view = self.view[order]

    def _sort_key(self, name: str) -> np.ndarray:
        values = self.values(name)
        if values.dtype != object:
            return np.nan_to_num(values.astype(float), nan=-np.inf)
        return self.table.text_ranks(name)  # made once per table, in its job where it was built

    def table_row(self, view_row: int) -> int:
        return int(self.view[view_row])

    # -- QAbstractTableModel ---------------------------------------------------------------------

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.view)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.names)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.table is None:
            return None
        name = self.names[index.column()]
        value = self.values(name)[self.view[index.row()]]
        if role == Qt.DisplayRole:
            if isinstance(value, str):
                return value
            if np.issubdtype(type(value), np.integer):
                return str(int(value))
            return "" if np.isnan(value) else (f"{value:+.2f}" if name == "change" else f"{value:.3f}")
        if role == Qt.ToolTipRole and isinstance(value, str):
            return value
        if role == Qt.TextAlignmentRole and not isinstance(value, str):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal:
            return str(section + 1) if role == Qt.DisplayRole else None
        if not 0 <= section < len(self.names):
            return None
        name = self.names[section]
        if role == Qt.DisplayRole:
            return HEADERS.get(name, name)
        if role == Qt.ToolTipRole:
            return TOOLTIPS.get(name, f"sort by {HEADERS.get(name, name)}")
        return None
