"""The Examples table's filter and named slices; its state kept between sessions (filter, slices
and sort, in the app's settings; none outside the app, where `explorer export` shows every row
in the data's order); and the rows shown, written to a CSV or JSON-lines file."""

from __future__ import annotations

import json

from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from explorer.analysis.example_filters import SliceFilter
from explorer.errors import UserError
from explorer.ui.jobs import one_line
from explorer.ui.panels.decoding_widgets import show_text

SETTINGS_PREFIX = "examples/"


def _settings() -> QSettings | None:
    """The app's settings; None outside the app (`explorer export`, scripts), whose tables show
    every row whatever filter the user last left in the app."""
    from PySide6.QtCore import QCoreApplication

    from explorer.ui.app import APPLICATION, ORGANISATION

    if QCoreApplication.applicationName() != APPLICATION:
        return None
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANISATION, APPLICATION)


class TableState:
    """Mixed into the Examples panel: it has `view`, `model`, `slices`, `pattern_boxes`,
    `min_length`, `max_length`, `slice_box`, `_refresh_summary()` and `_say()`."""

    # -- filtering and slices --------------------------------------------------------------------

    def current_filter(self) -> SliceFilter:
        return SliceFilter({name: box.text() for name, box in self.pattern_boxes.items() if box.text()},
                           "source_length", self.min_length.value() or None,
                           self.max_length.value() or None)

    def apply_filter(self) -> bool:
        """Show the rows the filter boxes select; a bad expression leaves the table as it was."""
        try:
            self.model.set_filter(self.current_filter())
        except UserError as exc:
            self._say(str(exc))
            return False
        self._say("")
        self._refresh_summary()
        self._save_state()
        return True

    def set_filter_fields(self, slice_filter: SliceFilter) -> None:
        for name, box in self.pattern_boxes.items():
            show_text(box, slice_filter.patterns.get(name, ""))
        self.min_length.setValue(slice_filter.min_length or 0)
        self.max_length.setValue(slice_filter.max_length or 0)

    def save_slice(self, name: str) -> bool:
        name = name.strip()
        if not name:
            self._say("give the slice a name first")
            return False
        try:
            self.current_filter().compiled()
        except UserError as exc:
            self._say(str(exc))
            return False
        self.slices[name] = self.current_filter().to_dict()
        self._fill_slice_box(name)
        self._save_state()
        return True

    def load_slice(self, name: str) -> None:
        if name in self.slices:
            self.set_filter_fields(SliceFilter.from_dict(self.slices[name]))
            self.apply_filter()

    def _fill_slice_box(self, current: str = "") -> None:
        self.slice_box.clear()
        self.slice_box.addItems(sorted(self.slices))
        if current:
            self.slice_box.setCurrentText(current)

    def _save_state(self) -> None:
        header = self.view.horizontalHeader()
        names = self.model.names
        section = header.sortIndicatorSection()
        state = {"filter": self.current_filter().to_dict(), "slices": self.slices,
                 "sort": names[section] if 0 <= section < len(names) else None,
                 "descending": header.sortIndicatorOrder() == Qt.DescendingOrder}
        settings = _settings()
        if settings is not None:
            settings.setValue(SETTINGS_PREFIX + "state", json.dumps(state))

    def _restore_state(self) -> None:
        settings = _settings()
        try:
            state = json.loads(str(settings.value(SETTINGS_PREFIX + "state", "{}"))) if settings else {}
        except ValueError:
            state = {}
        self.slices = dict(state.get("slices") or {})
        self._fill_slice_box()
        self._saved_sort = (state.get("sort"), bool(state.get("descending")))
        saved_filter = SliceFilter.from_dict(state.get("filter") or {})
        self.set_filter_fields(saved_filter)
        try:
            saved_filter.compiled()
            self.model.filter = saved_filter
        except UserError:
            pass

    def _restore_sort(self) -> None:
        name, descending = self._saved_sort
        if name in self.model.names:
            header = self.view.horizontalHeader()
            header.blockSignals(True)
            header.setSortIndicator(self.model.names.index(name),
                                    Qt.DescendingOrder if descending else Qt.AscendingOrder)
            header.blockSignals(False)
            self.model.sort_by(name, descending)

    def choose_export(self) -> None:
        if self.model.table is None:
            self._say("evaluate first: there is nothing to export")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export examples", "examples.csv",
                                              "CSV (*.csv);;JSON lines (*.jsonl)")
        if path:
            self.export_rows(path)

    def export_rows(self, path: str) -> None:
        """The rows shown (this slice, this order) to .csv or .jsonl."""
        try:
            self.model.table.take(self.model.view).write(path)
            self._say(f"wrote {len(self.model.view)} rows to {path}")
        except (UserError, OSError) as exc:
            self._say(one_line(exc))
