"""Examples: the whole validation set (or any file) as a table of per-example scores.

Columns: source, reference, the model's greedy output, teacher-forced loss (total and per token),
token accuracy, sentence BLEU and chrF, lengths (language models: loss and perplexity per line).
Sort by any column header, filter by regular expressions and length, save filters as named
slices; the summary line is the current slice's corpus BLEU, mean loss and count. Selecting a row
makes it the probe of every panel. Below the table: BLEU (or loss) by source-length bucket, the
tokens the model gets wrong most often (a click shows their examples), the probe's nearest
training examples by encoder or decoder state, and a pinned evaluation to compare with (the
"change" column: which examples got better or worse).

Evaluation runs in the panel's job runner, batch by batch with progress, and stops on Stop. It
runs when a model is opened or a run's snapshot is scrubbed to, on demand (Evaluate, F5),
and while training at each evaluation if asked (on a copy of the model).
"""

from __future__ import annotations

import copy
import threading

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.analysis.examples import (
    SliceFilter,
    evaluate_examples,
    examples_of,
    read_examples,
    summarize,
    worst_tokens,
)
from explorer.errors import UserError
from explorer.runs.compare import evaluate_runs
from explorer.ui.empty_state import EmptyState
from explorer.ui.examples_model import ExamplesModel, column_widths
from explorer.ui.length_plot import make_length_widget
from explorer.ui.neighbours_view import NeighboursView
from explorer.ui.panels.base import Panel
from explorer.ui.panels.examples_state import TableState
from explorer.ui.progress_bar import FrameProgressBar
from explorer.ui.top_examples_view import TopExamplesView

WORST_TOKENS = 30
TABS_HEIGHT = 220  # px the tabs below the table keep where they can: a readable length plot
NO_MODEL = "Open or create a model, then Evaluate: its score by source length is drawn here."
NOT_EVALUATED = "Not evaluated yet: Evaluate scores every example and draws them by length here."
EVALUATING = "Evaluating: the score by source length is drawn here once every example is scored."
# in the table's place while there is none
NO_MODEL_ROWS = "Open or create a model: every example of its data is a row here, with its scores."
NOT_EVALUATED_ROWS = "Not evaluated yet: Evaluate (F5) scores every example, one row each."
MASKED_LM = "A masked language model has no left-to-right loss per example to show."


def _evaluate_job(workspace, pairs, progress, stop: threading.Event):
    """Runs in the job runner's thread: plain data in (pairs), an ExampleTable out, its texts
    prepared here for the table's sorting and filtering (not on the GUI thread)."""
    table = evaluate_examples(workspace, pairs, progress=progress, should_stop=stop.is_set)
    if table is None:
        raise UserError("evaluation stopped")
    return table.prepare()


def _runs_job(folders, pairs, seq2seq: bool, stop: threading.Event):
    """Runs in the job runner's thread: run folders and pairs in, tables and problems out."""
    results = evaluate_runs(folders, pairs, seq2seq, should_stop=stop.is_set)
    if results is None:
        raise UserError("evaluation stopped")
    return results


class ExamplesPanel(TableState, Panel):
    PANEL_ID = "examples"
    TITLE = "Examples"
    TOOLTIP = ("Every example with its output, loss, BLEU and chrF: sort, filter, slice; "
               "select a row to probe it (F5 evaluates)")

    progressed = Signal(int, int)  # emitted from the runner's thread, delivered on the GUI thread
    evaluated = Signal()  # a table arrived

    def __init__(self, bus, parent: QWidget | None = None) -> None:
        super().__init__(bus, parent)
        self.pairs: list[tuple[str, str]] | None = None  # None: the workspace's validation set
        self.data_label = "validation set"
        self.pinned = None  # an ExampleTable to compare with
        self.pinned_label = ""
        self.slices: dict[str, dict] = {}
        self.message = ""
        self.worst = None  # explorer.analysis.examples.TokenErrors of the table shown
        self._saved_sort: tuple[str | None, bool] = (None, False)
        self._fitted_widths: list[int] = []  # the column widths set last for the view's width
        self._stop = threading.Event()
        self.runner = self.job_runner("evaluate")
        self.runner.done.connect(self._on_table)
        self.runner.failed.connect(self._on_failed)
        self.runner.busy_changed.connect(self._on_busy)
        self.run_folders = dict(bus.compared_runs_now)  # the Compare runs panel's runs
        self.run_tables: dict[str, tuple[str, object]] = {}  # name: (label, ExampleTable)
        self.runs_runner = self.job_runner("compared runs")
        self.runs_runner.done.connect(self._on_run_tables)
        self.runs_runner.failed.connect(lambda _job, message: self._say(message))
        self.progressed.connect(self._on_progress)
        self.model = ExamplesModel(self)
        self._build()
        self._restore_state()
        bus.workspace_changed.connect(self.set_workspace)
        bus.eval_metrics.connect(self._on_eval_metrics)
        bus.compared_runs.connect(self._on_compared_runs)
        if bus.workspace is not None:
            self.set_workspace(bus.workspace)

    # -- widgets ---------------------------------------------------------------------------------

    def _build(self) -> None:
        self.evaluate_button = self._button("Evaluate", "Evaluate every example now (F5)",
                                            self.evaluate)
        self.open_button = self._button("Open file…", "Evaluate a source<TAB>reference file, two "
                                        "line-aligned files (source, reference) or a text file",
                                        self.choose_files)
        self.stop_button = self._button("Stop", "Stop the evaluation", self.stop)
        self.stop_button.setEnabled(False)
        self.progress = FrameProgressBar()
        self.progress.setMaximumWidth(200)
        self.progress.setToolTip("Examples evaluated")
        self.auto_box = QCheckBox("at each evaluation while training")
        self.auto_box.setToolTip("Re-evaluate every example at each of training's evaluations "
                                 "(on a copy of the model; costs time)")
        self.pin_button = self._button("Pin for comparison", "Keep this evaluation: later ones "
                                       "show each example's change against it", self.pin)
        self.export_button = self._button("Export…", "Write the rows shown to CSV or JSON lines",
                                          self.choose_export)
        self.whatif_button = self._button("What if…", "Pin the selected row's source in the What "
                                          "if panel, to edit it and compare", self.what_if)
        top = QHBoxLayout()
        for widget in (self.evaluate_button, self.open_button, self.stop_button, self.progress,
                       self.auto_box, self.pin_button, self.whatif_button, self.export_button):
            top.addWidget(widget)
        top.addStretch(1)

        self.pattern_boxes = {}
        filters = QHBoxLayout()
        for name in ("source", "reference", "output"):
            box = QLineEdit()
            box.setPlaceholderText(f"{name} regex")
            box.setToolTip(f"Show only rows whose {name} matches this regular expression "
                           "(case-insensitive unless it has a capital letter)")
            box.editingFinished.connect(self.apply_filter)
            self.pattern_boxes[name] = box
            filters.addWidget(box, 1)
        self.min_length, self.max_length = QSpinBox(), QSpinBox()
        for box, tip in ((self.min_length, "Shortest source (tokens); 0: no bound"),
                         (self.max_length, "Longest source (tokens); 0: no bound")):
            box.setRange(0, 100_000)
            box.setSpecialValueText("any")  # 0: no bound
            box.setToolTip(tip)
            box.editingFinished.connect(self.apply_filter)
        filters.addWidget(QLabel("src len"))
        filters.addWidget(self.min_length)
        filters.addWidget(QLabel("to"))
        filters.addWidget(self.max_length)
        self.slice_name = QLineEdit()
        self.slice_name.setPlaceholderText("slice name")
        self.slice_name.setMaximumWidth(120)
        self.save_slice_button = self._button("Save slice", "Save the filters under this name",
                                              lambda: self.save_slice(self.slice_name.text()))
        self.slice_box = QComboBox()
        self.slice_box.setToolTip("Named slices: choose one to apply its filters")
        self.slice_box.activated.connect(lambda _: self.load_slice(self.slice_box.currentText()))
        for widget in (self.slice_name, self.save_slice_button, self.slice_box):
            filters.addWidget(widget)

        self.summary = QLabel()
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.summary.setVisible(False)  # until there is a table to sum up
        self.status = QLabel()
        self.status.setWordWrap(True)

        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.view.setWordWrap(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        self.view.horizontalHeader().setSortIndicatorShown(True)
        self.view.horizontalHeader().sortIndicatorChanged.connect(lambda *_: self._save_state())
        self.view.selectionModel().currentRowChanged.connect(self._on_row)
        self.view.setToolTip("Select a row to make it the probe of every panel")

        self.length_widget, self.length_plot = make_length_widget()
        self.tokens_table = QTableWidget(0, 4)
        self.tokens_table.setHorizontalHeaderLabels(["token", "count", "error rate", "mean loss"])
        self.tokens_table.horizontalHeader().setSectionResizeMode(QHeaderView.Stretch)
        self.tokens_table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.tokens_table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.tokens_table.setToolTip("Reference tokens the model predicts worst under teacher "
                                     "forcing; click one to show its examples")
        self.tokens_table.cellClicked.connect(lambda row, _col: self.show_token_rows(row))
        self.neighbours = NeighboursView(self)
        self.neighbours.chosen.connect(self.bus.probe_requested.emit)
        self.bus.probe_input_changed.connect(self.neighbours.query)
        self.tabs = QTabWidget()
        self.runs_button = self._button(
            "Add compared runs", "Evaluate the latest checkpoint of every run in the Compare runs "
            "panel on these examples, one line each (e.g. RNNsearch against RNNencdec)",
            self.evaluate_runs)
        self.runs_button.setEnabled(bool(self.run_folders))
        by_length = QWidget()
        length_layout = QVBoxLayout(by_length)
        length_layout.setContentsMargins(0, 0, 0, 0)
        length_layout.addWidget(self.runs_button, 0, Qt.AlignLeft)
        # no empty axes before an evaluation: one line why in their place
        self.length_view = EmptyState(self.length_widget, NO_MODEL)
        length_layout.addWidget(self.length_view, 1)
        self.tabs.addTab(by_length, "By length")
        self.tabs.addTab(self.tokens_table, "Worst tokens")
        self.tabs.addTab(self.neighbours, "Neighbours")
        self.top_examples = TopExamplesView(self)
        self.top_examples.chosen.connect(self.select_table_row)
        self.bus.top_examples_requested.connect(self.find_top_examples)
        self.tabs.addTab(self.top_examples, "Top examples")
        self.tabs.setToolTip("Where the model fails")

        upper = QWidget()
        layout = QVBoxLayout(upper)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(filters)
        layout.addWidget(self.summary)
        layout.addWidget(self.status)
        self.table_view = EmptyState(self.view, NO_MODEL_ROWS)  # no empty grid before a table
        layout.addWidget(self.table_view, 1)
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(upper)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(0, 2)  # the table first (its first share: `_on_table`)
        splitter.setStretchFactor(1, 1)
        self.splitter = splitter
        root = QVBoxLayout(self)
        root.addWidget(splitter)
        QShortcut(QKeySequence("F5"), self, self.evaluate, context=Qt.WidgetWithChildrenShortcut)

    def _button(self, text, tip, slot) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        return button

    # -- evaluating ------------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        from explorer.families import family_of

        self.stop()
        self.neighbours.set_workspace(workspace)
        self.top_examples.clear()
        decodes = workspace is not None and family_of(workspace.model).decodes
        self.evaluate_button.setEnabled(decodes)
        self.open_button.setEnabled(decodes)
        if workspace is None:
            self.length_view.show_message(NO_MODEL)
            self._show_empty(NO_MODEL_ROWS)
            return
        if not decodes:
            self._say("a masked language model has no left-to-right loss per example to show")
            self.length_view.show_message(MASKED_LM)
            self._show_empty(MASKED_LM)
            return
        if self.model.table is None:
            self._show_empty(NOT_EVALUATED_ROWS, NOT_EVALUATED)
        if self.pairs is not None or getattr(workspace, "data", None) is not None:
            self.evaluate()  # a new model, or a scrubbed snapshot: its own scores

    def evaluate(self) -> int:
        """Evaluate the current examples in the background; -1 when there is nothing to do."""
        if self.workspace is None:
            self._say("no model yet: train one or open a checkpoint")
            return -1
        try:
            pairs = self.pairs if self.pairs is not None else examples_of(self.workspace)
        except UserError as exc:
            self._say(str(exc))
            return -1
        # the runner works on its own copy: training may start (or go on) with the original in
        # its thread, and `inference` would otherwise flip the shared model's train/eval mode
        workspace = copy.copy(self.workspace)
        workspace.model = copy.deepcopy(self.workspace.model)
        self._stop = threading.Event()
        self.progress.setRange(0, len(pairs))
        self.progress.setValue(0)
        self._say(f"evaluating {len(pairs)} examples of the {self.data_label}…")
        if self.model.table is None:
            self._show_empty(f"Evaluating {len(pairs)} examples of the {self.data_label}…", EVALUATING)
        return self.runner.submit(_evaluate_job, workspace, pairs, self.progressed.emit, self._stop)

    def stop(self) -> None:
        self._stop.set()
        if self.runner.busy:
            self.runner.cancel()
            self._say("evaluation stopped; the table keeps what it had")
            self._show_empty(NOT_EVALUATED_ROWS, NOT_EVALUATED)

    def _on_failed(self, _job, message: str) -> None:
        self._say(message)
        self._show_empty(NOT_EVALUATED_ROWS, NOT_EVALUATED)

    def _show_empty(self, rows_message: str, length_message: str | None = None) -> None:
        """Where there is no table yet: why, in the table's (and the length plot's) place."""
        if self.model.table is None:
            self.table_view.show_message(rows_message)
            if length_message:
                self.length_view.show_message(length_message)

    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Examples to evaluate", "",
                                                "Text files (*.txt *.tsv *.gz *.*)")
        if paths:
            self.open_files(paths)

    def open_files(self, paths: list[str]) -> int:
        """One TSV or text file, or two line-aligned files (source, reference); a bad file is a
        one-line message and the table keeps what it had."""
        if self.workspace is None:
            self._say("no model yet: train one or open a checkpoint")
            return -1
        try:
            if len(paths) == 2:
                pairs = read_examples(self.workspace, src=paths[0], tgt=paths[1])
            elif len(paths) == 1:
                pairs = read_examples(self.workspace, data=paths[0])
            else:
                raise UserError("choose one file, or two line-aligned files (source, reference)")
        except UserError as exc:
            self._say(str(exc))
            return -1
        from pathlib import Path

        self.pairs = pairs
        self.data_label = " + ".join(Path(p).name for p in paths)
        return self.evaluate()

    def _on_progress(self, done: int, total: int) -> None:
        if self.runner.busy:
            self.progress.setRange(0, total)
            self.progress.setValue(done)

    def _on_busy(self, busy: bool) -> None:
        self.stop_button.setEnabled(busy)

    def _on_eval_metrics(self, _metrics) -> None:
        if self.bus.state.training.active and self.auto_box.isChecked() and not self.runner.busy:
            self.evaluate()

    def _on_compared_runs(self, folders: dict) -> None:
        self.run_folders = dict(folders)
        self.runs_button.setEnabled(bool(folders))
        self.run_tables = {name: run for name, run in self.run_tables.items() if name in folders}
        if self.model.table is not None:
            self._refresh_views()

    def evaluate_runs(self) -> int:
        """Every compared run on the examples shown, in the background; -1 when there is none."""
        if self.model.table is None or not self.run_folders:
            self._say("evaluate, and add runs to the Compare runs panel, first")
            return -1
        pairs = list(zip(self.model.table.columns["source"],
                         self.model.table.columns["reference"] if self.model.table.seq2seq
                         else [""] * len(self.model.table)))
        self._say(f"evaluating {len(self.run_folders)} compared run(s) on these {len(pairs)} examples…")
        return self.runs_runner.submit(_runs_job, dict(self.run_folders), pairs,
                                       self.model.table.seq2seq, self._stop)

    def _on_run_tables(self, _job, results) -> None:
        self.run_tables, problems = results
        self._say("; ".join(problems))
        self._refresh_views()

    def _on_table(self, _job, table) -> None:
        self.progress.setValue(self.progress.maximum())
        first = self.model.table is None
        self.model.set_table(table, self.pinned)
        self.table_view.show_view()
        self._fit_columns(first)
        if first:  # the table two thirds of the height (15 rows at 1280 x 800), the plots a third
            total = sum(self.splitter.sizes())  # but TABS_HEIGHT in a short dock, up to half
            tabs = max(total // 3, min(TABS_HEIGHT, total // 2))
            self.splitter.setSizes([total - tabs, tabs])
        self._restore_sort()
        self._say("" if self.pinned is None or self.model.change is not None else
                  "the pinned evaluation is of other examples: no change column")
        self._refresh_views()
        self.evaluated.emit()

    def _fit_columns(self, first: bool = False) -> None:
        """Column widths for the view's width (see `column_widths`): for the first table, then at
        each resize while the user has set none of them by hand."""
        header, names = self.view.horizontalHeader(), self.model.names
        if not first and [header.sectionSize(c) for c in range(len(names))] != self._fitted_widths:
            return
        self._fitted_widths = column_widths(names, self.view.viewport().width())
        for column, width in enumerate(self._fitted_widths):
            header.resizeSection(column, width)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.model.table is not None:
            self._fit_columns()

    def show_token_rows(self, token_row: int) -> None:
        """Only the examples whose reference holds the token clicked in "Worst tokens"."""
        if self.model.table is None or token_row >= len(self.worst.rows):
            return
        self.model.beginResetModel()
        self.model.view = self.worst.rows[token_row]
        self.model._sort_view()
        self.model.endResetModel()
        self._refresh_summary()
        self._say(f"examples with the token {self.worst.labels[token_row]!r} "
                  "(change a filter to show all again)")

    def find_top_examples(self, query) -> int:
        """The table's examples where `query` (a unit or head) is most active, in the "Top
        examples" tab; -1 when there is no table to search yet."""
        self.tabs.setCurrentWidget(self.top_examples)
        table = self.model.table
        if table is None or self.workspace is None:
            self.top_examples.say("evaluate first (F5): the top examples are rows of the table")
            return -1
        references = table.columns["reference"] if table.seq2seq else [""] * len(table)
        pairs = [(str(s), str(r)) for s, r in zip(table.columns["source"], references)]
        return self.top_examples.search(self.workspace, pairs, query)

    def select_table_row(self, row: int) -> None:
        """Select the table's row `row` (an index into the table), showing every row first when
        the filter hides it; selecting it makes it the probe."""
        shown = np.flatnonzero(self.model.view == row)
        if not len(shown):
            self.set_filter_fields(SliceFilter())
            self.apply_filter()
            shown = np.flatnonzero(self.model.view == row)
        if len(shown):
            self.view.selectRow(int(shown[0]))
            self.view.scrollTo(self.model.index(int(shown[0]), 0))

    # -- comparing -------------------------------------------------------------------------------

    def pin(self) -> None:
        if self.model.table is None:
            self._say("evaluate first: there is nothing to pin")
            return
        self.pinned = self.model.table
        self.pinned_label = f"step {self.pinned.step} (pinned)"
        self.model.set_table(self.model.table, self.pinned)
        self._refresh_views()
        self._say(f"pinned the evaluation at step {self.pinned.step}: later evaluations show "
                  "each example's change against it")

    def what_if(self) -> bool:
        """The selected row's source pinned as the What if panel's original."""
        current = self.view.currentIndex()
        if self.model.table is None or not current.isValid():
            self._say("select a row first: its source is pinned in the What if panel")
            return False
        row = self.model.table_row(current.row())
        self.bus.whatif_requested.emit(str(self.model.table.columns["source"][row]))
        self.bus.show_panel.emit("whatif")
        return True

    # -- views -----------------------------------------------------------------------------------

    def _refresh_views(self) -> None:
        table = self.model.table
        self._refresh_summary()
        series = [(f"step {table.step}", table)]
        if self.pinned is not None and self.pinned is not table and self.model.change is not None:
            series.append((self.pinned_label, self.pinned))
        series += [(label, run) for label, run in self.run_tables.values()  # these examples only
                   if np.array_equal(run.columns["source"], table.columns["source"])]
        self.length_plot.set_tables(series)
        self.length_view.show_view()
        try:
            self.worst = worst_tokens(table, top=WORST_TOKENS)
        except UserError:
            self.worst = None
        rows = [] if self.worst is None else list(zip(self.worst.labels, self.worst.counts,
                                                      self.worst.error_rate, self.worst.mean_loss))
        self.tokens_table.setRowCount(len(rows))
        for r, (label, count, rate, loss) in enumerate(rows):
            for c, text in enumerate((str(label), str(int(count)), f"{rate:.3f}", f"{loss:.3f}")):
                self.tokens_table.setItem(r, c, QTableWidgetItem(text))

    def _refresh_summary(self) -> None:
        self.summary.setVisible(self.model.table is not None)  # no blank line before a table
        if self.model.table is None:
            self.summary.setText("")
            return
        try:
            summary = summarize(self.model.table, self.model.view)
        except UserError as exc:
            self.summary.setText(f"{exc} (of {len(self.model.table)} at step {self.model.table.step})")
            return
        self.summary.setText(f"<b>Slice:</b> {summary.format()} — of {len(self.model.table)} "
                             f"examples of the {self.data_label} at step {self.model.table.step}")

    def _on_row(self, current, _previous) -> None:
        if not current.isValid() or self.model.table is None:
            return
        row = self.model.table_row(current.row())
        columns = self.model.table.columns
        reference = columns["reference"][row] if "reference" in columns else ""
        self.bus.probe_requested.emit(str(columns["source"][row]), str(reference))

    def _say(self, message: str) -> None:
        self.message = message
        self.status.setText(message)
        self.status.setVisible(bool(message))

    # -- export ----------------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.model.table is not None

    def plot_items(self) -> dict[str, object]:
        return {} if self.length_view.empty else {"length": self.length_widget.getPlotItem()}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.model.table is None:
            return {}
        shown = self.model.table.take(self.model.view)
        tables = {"rows": (list(shown.names), [list(row.values()) for row in shown.rows()]),
                  "length": (["series", "bucket", "examples", "bleu", "loss_per_token"],
                             self.length_plot.rows())}
        if self.top_examples.found is not None:
            tables["top_examples"] = self.top_examples.found.table()
        if self.worst is not None:
            tables["tokens"] = (["token", "count", "error_rate", "mean_loss"],
                                [[str(a), int(b), float(c), float(d)] for a, b, c, d in zip(
                                    self.worst.labels, self.worst.counts, self.worst.error_rate,
                                    self.worst.mean_loss)])
        return tables

    def shutdown(self) -> None:
        self._stop.set()
        super().shutdown()


class LengthPanel(ExamplesPanel):
    """`explorer export --plots length`: the examples' BLEU (or loss) by source length alone."""

    PANEL_ID = "length"
    TITLE = "BLEU by source length"

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return {key: value for key, value in super().tables().items() if key == "length"}
