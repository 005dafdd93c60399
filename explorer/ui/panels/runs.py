"""Compare runs: several run folders' curves overlaid, one colour and legend entry per run, and
two runs' attention or beam search trees side by side on the same input.

Runs come from "Add run…", from folders dropped onto the panel, or `add_run(folder)`; the model
open in this window joins as "this window" while it has curves. The metric box offers every
metric any run recorded (train and validation loss, BLEU, gradient norm, ...). Runs still being
written grow on screen: each has a RunFollower, checked once a second (two stat calls) until its
writer finishes or stops. A folder that is not a run is one line in the status, never a dialog.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QIcon, QKeySequence, QPixmap, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
)

from explorer.errors import UserError
from explorer.runs.compare import (
    METRICS, THIS_WINDOW, RunCurves, check_run_folder, config_summary, curves_from_rows, eval_record,
    first_metric, metric_series, metric_table, run_name,
)
from explorer.runs.follow import RunFollower, RunState
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.jobs import one_line
from explorer.ui.panels.base import Panel
from explorer.ui.panels.runs_side import SideBySide
from explorer.ui.plot_style import ViewPages, add_legend, readable_axes

# one colour per run, in the order added (matplotlib's tab10: tells apart on light and dark)
RUN_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf")
NO_RUNS = "Add run folders (Add run…, or drop them here) to compare their curves."
FOLLOW_INTERVAL_MS = 1000
WINDOW_REDRAW_MS = 1000  # while training, this window's curve is rebuilt at most once a second
LIST_ROWS = 4  # runs the list shows before it scrolls
EVAL_METRICS = {key for key, (_, source) in METRICS.items() if source == "eval"}


class RunEntry:
    """One compared run: where it is read from, what it recorded, and its curve."""

    def __init__(self, curves: RunCurves, colour: str, folder: Path | None = None,
                 follower: RunFollower | None = None) -> None:
        self.curves, self.colour, self.folder, self.follower = curves, colour, folder, follower
        self.curve: pg.PlotDataItem | None = None
        self.snapshots: list[int] = []

    @property
    def name(self) -> str:
        return self.curves.name

    def ended(self) -> bool:
        return self.follower is None or self.follower.state in (RunState.FINISHED,
                                                                RunState.STOPPED)


class RunsPanel(Panel):
    PANEL_ID = "runs"
    TITLE = "Compare runs"
    TOOLTIP = ("Training runs side by side: add run folders (or drop them here) to overlay their "
               "curves, one colour per run, and set two runs' attention or beam search trees "
               "side by side on one input.")

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.entries: dict[str, RunEntry] = {}  # run name -> entry, in the order added
        self._window_rows: list[dict] = []  # this window's training as metrics.jsonl rows
        self._colour_index = 0

        self.add_button = QPushButton("Add run…")
        self.add_button.setToolTip("Add a run folder (written by explorer train --out or the "
                                   "app) to the comparison; folders can also be dropped here")
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Remove the selected runs from the comparison (Delete)")
        self.metric_box = QComboBox()
        self.metric_box.setToolTip("The recorded metric to overlay: every metric any run wrote")
        self.metric_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.log_box = QCheckBox("log y")
        self.log_box.setToolTip("A logarithmic y axis (losses and gradient norms span decades)")
        self.window_box = QCheckBox("this window's model")
        self.window_box.setChecked(True)
        self.window_box.setToolTip("Also overlay the curves of the model open in this window, "
                                   "as the run \"this window\"")
        self.run_list = QListWidget()
        self.run_list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        self.run_list.setToolTip("The compared runs: colour, name and model. Hover for the folder.")
        self._fit_list()
        self.status = QLabel("Add run folders to compare them.")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status.setToolTip("What the panel did last, or why a folder could not be added")

        self.view = pg.GraphicsLayoutWidget()
        self.view.setToolTip("The chosen metric of every run against the training step")
        self.plot = self.view.addPlot(axisItems=readable_axes("left", "bottom", whole=("bottom",)))
        self.plot.setLabel("bottom", "step")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setDownsampling(auto=True, mode="peak")
        self.plot.setClipToView(True)
        self.legend = add_legend(self.plot, below=True, columns=3)
        self.side_by_side = SideBySide(self.job_runner("attention"))
        self.pages = ViewPages()
        self.curves_view = EmptyState(self.view, NO_RUNS)  # no empty axes before a run: why
        self.pages.add_page("Curves", self.curves_view)
        self.pages.add_page("Side by side", self.side_by_side)

        controls = QHBoxLayout()
        for widget in (self.add_button, self.remove_button, QLabel("Metric"), self.metric_box,
                       self.log_box, self.window_box):
            controls.addWidget(widget)
        controls.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(controls)
        layout.addWidget(self.run_list)
        layout.addWidget(self.status)
        layout.addWidget(self.pages, stretch=1)

        self.setAcceptDrops(True)
        self.follow_timer = QTimer(self)
        self.follow_timer.setInterval(FOLLOW_INTERVAL_MS)
        self.follow_timer.timeout.connect(self.follow)
        # rebuilding this window's curves costs O(steps): coalesce the batches (up to 4 a second)
        self.window_timer = QTimer(self, singleShot=True, interval=WINDOW_REDRAW_MS)
        self.window_timer.timeout.connect(self._update_window_entry)
        self.add_button.clicked.connect(self.choose_run)
        self.remove_button.clicked.connect(self.remove_selected)
        QShortcut(QKeySequence.StandardKey.Delete, self.run_list, self.remove_selected)
        self.metric_box.currentIndexChanged.connect(self.redraw)
        self.log_box.toggled.connect(lambda on: self.plot.setLogMode(y=on))
        self.window_box.toggled.connect(self._update_window_entry)
        self.side_by_side.failed.connect(self.status.setText)
        bus.workspace_changed.connect(self.on_workspace)
        bus.step_metrics.connect(self.add_steps)
        bus.eval_metrics.connect(self.add_eval)
        install_export_menu(self)

    # -- runs in and out ---------------------------------------------------------------------

    def choose_run(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a run folder to the comparison")
        if folder:
            self.add_run(folder)

    def add_run(self, folder: str | Path) -> bool:
        """Add the run in `folder`; a folder that is not one is a one-line status, and False."""
        try:
            folder = check_run_folder(folder).resolve()
            if any(entry.folder == folder for entry in self.entries.values()):
                raise UserError(f"{folder}: already compared")
            follower = RunFollower(folder)
            follower.poll()  # reads what is written so far
            name = self._unique_name(run_name(folder))
            curves = RunCurves(name, "", {})
            entry = RunEntry(curves, self._next_colour(), folder, follower)
            self._refresh_entry(entry)
            curves.summary = _summary(follower)
        except (UserError, OSError) as exc:
            self.status.setText(one_line(exc))
            return False
        self.entries[name] = entry
        self._after_change(f"Added {name} ({folder}).")
        if not entry.ended():
            self.follow_timer.start()
        return True

    def remove_run(self, name: str) -> None:
        entry = self.entries.pop(name, None)
        if entry is not None and entry.curve is not None:
            self.plot.removeItem(entry.curve)
            self.legend.removeItem(entry.curve)
        self._after_change(f"Removed {name}.")

    def remove_selected(self) -> None:
        names = [item.data(Qt.ItemDataRole.UserRole) for item in self.run_list.selectedItems()]
        for name in names:
            if name == THIS_WINDOW:  # removed by hand: out until the box is ticked again
                self.window_box.setChecked(False)
            else:
                self.remove_run(name)

    def _unique_name(self, name: str) -> str:
        unique, count = name, 1
        while unique in self.entries or unique == THIS_WINDOW:
            count += 1
            unique = f"{name} ({count})"
        return unique

    def _next_colour(self) -> str:
        colour = RUN_COLOURS[self._colour_index % len(RUN_COLOURS)]
        self._colour_index += 1
        return colour

    def _refresh_entry(self, entry: RunEntry) -> None:
        reader = entry.follower.reader
        entry.curves.series = metric_series(reader.curves())
        entry.snapshots = [snapshot.step for snapshot in reader.snapshots()]

    # -- drag and drop -------------------------------------------------------------------------

    @staticmethod
    def _dropped_folders(event) -> list[Path]:
        mime = event.mimeData()
        if not mime.hasUrls():
            return []
        return [Path(url.toLocalFile()) for url in mime.urls()
                if url.isLocalFile() and Path(url.toLocalFile()).is_dir()]

    def dragEnterEvent(self, event) -> None:
        if self._dropped_folders(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        folders = self._dropped_folders(event)
        for folder in folders:
            self.add_run(folder)
        if folders:
            event.acceptProposedAction()

    # -- following runs still written ------------------------------------------------------------

    def follow(self) -> None:
        """Read what the live runs wrote since the last check; stop when none is live."""
        changed = False
        for entry in self.entries.values():
            if entry.ended():
                continue
            update = entry.follower.poll()
            if update.rows or update.snapshots_changed or update.reset or entry.ended():
                self._refresh_entry(entry)
                changed = True
        if changed:
            self._after_change()
        if all(entry.ended() for entry in self.entries.values()):
            self.follow_timer.stop()

    # -- this window's model ---------------------------------------------------------------------

    def on_workspace(self, workspace) -> None:
        self._window_rows = list(getattr(workspace, "history", None) or [])
        self.window_timer.start()  # a long history costs O(rows): not while a model opens

    def add_steps(self, steps) -> None:
        self._window_rows.extend(
            {"step": s.step, "loss": s.loss, "lr": s.lr, "grad_norm": s.grad_norm,
             "grad_norm_clipped": s.grad_norm_clipped, "tokens": s.tokens,
             "tokens_per_s": s.tokens_per_s, "elapsed_s": s.elapsed_s} for s in steps)
        if not self.window_timer.isActive():
            self.window_timer.start()

    def add_eval(self, metrics) -> None:
        self._window_rows.append(eval_record(metrics))
        if not self.window_timer.isActive():
            self.window_timer.start()

    def _update_window_entry(self) -> None:
        if self.held_until_shown(self._update_window_entry):
            return  # rebuilding the curve reads every row: once, when the panel is shown
        wanted = self.window_box.isChecked() and bool(self._window_rows)
        entry = self.entries.get(THIS_WINDOW)
        if not wanted:
            if entry is not None:
                self.remove_run(THIS_WINDOW)
            return
        series = metric_series(curves_from_rows(self._window_rows))
        if entry is None:
            workspace = self.bus.workspace
            summary = getattr(workspace, "family", "") if workspace is not None else ""
            entry = RunEntry(RunCurves(THIS_WINDOW, summary, series), self._next_colour())
            self.entries[THIS_WINDOW] = entry
        entry.curves.series = series
        self._after_change()

    # -- drawing ---------------------------------------------------------------------------------

    def _after_change(self, message: str | None = None) -> None:
        self._fill_metrics()
        self._fill_list()
        self.redraw()
        folders = {name: e.folder for name, e in self.entries.items() if e.folder is not None}
        self.side_by_side.set_runs(folders, {name: e.snapshots for name, e in self.entries.items()})
        if folders != self.bus.compared_runs_now:  # the Examples panel's length plot follows
            self.bus.compared_runs_now = folders
            self.bus.compared_runs.emit(dict(folders))
        if message:
            self.status.setText(message)

    def _fill_metrics(self) -> None:
        recorded = {key for entry in self.entries.values() for key in entry.curves.series}
        wanted = [key for key in METRICS if key in recorded]
        have = [self.metric_box.itemData(i) for i in range(self.metric_box.count())]
        if wanted == have:
            return
        current = first_metric([e.curves for e in self.entries.values()],
                               self.metric_box.currentData() or "loss")
        self.metric_box.blockSignals(True)
        self.metric_box.clear()
        for key in wanted:
            self.metric_box.addItem(METRICS[key][0], key)
        self.metric_box.setCurrentIndex(max(self.metric_box.findData(current), 0))
        self.metric_box.blockSignals(False)

    def _fill_list(self) -> None:
        selected = {item.data(Qt.ItemDataRole.UserRole) for item in self.run_list.selectedItems()}
        self.run_list.clear()
        for name, entry in self.entries.items():
            text = f"{name} — {entry.curves.summary}" if entry.curves.summary else name
            if entry.follower is not None and not entry.ended():
                text += " (live)"
            item = QListWidgetItem(_swatch(entry.colour), text)
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setToolTip(str(entry.folder) if entry.folder else "the model open in this window")
            self.run_list.addItem(item)
            item.setSelected(name in selected)
        self._fit_list()

    def _fit_list(self) -> None:
        """As tall as its runs, up to LIST_ROWS of them (then it scrolls): the plots need room."""
        rows = min(max(self.run_list.count(), 1), LIST_ROWS)
        row_px = self.run_list.sizeHintForRow(0) if self.run_list.count() else \
            self.run_list.fontMetrics().height() + 4
        self.run_list.setFixedHeight(rows * row_px + 2 * self.run_list.frameWidth() + 2)

    def current_metric(self) -> str | None:
        return self.metric_box.currentData()

    def set_metric(self, key: str) -> None:
        """Show `key` (a METRICS key some run recorded)."""
        index = self.metric_box.findData(key)
        if index < 0:
            raise UserError(f"no compared run recorded {key!r}")
        self.metric_box.setCurrentIndex(index)

    def redraw(self) -> None:
        metric = self.current_metric()
        self.plot.setLabel("left", METRICS[metric][0] if metric else "")
        for entry in self.entries.values():
            steps, values = entry.curves.series.get(metric, (np.zeros(0), np.zeros(0)))
            if entry.curve is None:
                entry.curve = self.plot.plot(name=entry.name)
            pen = pg.mkPen(entry.colour, width=2 if metric in EVAL_METRICS else 1.5)
            symbol = "o" if metric in EVAL_METRICS else None
            entry.curve.setData(steps, values, pen=pen, symbol=symbol, symbolSize=5,
                                symbolBrush=entry.colour, symbolPen=None)
        self.curves_view.set_message(None if self.has_content() else NO_RUNS if not self.entries
                                     else f"No run here has recorded {metric or 'a metric'} yet.")

    # -- Panel contract --------------------------------------------------------------------------

    def legend_names(self) -> list[str]:
        return [label.text for _, label in self.legend.items]

    def has_content(self) -> bool:
        metric = self.current_metric()
        return any(len(entry.curves.series.get(metric, ((),))[0])
                   for entry in self.entries.values())

    def plot_items(self) -> dict[str, object]:
        curves = {} if self.curves_view.empty else {"curves": self.plot}  # no empty axes
        return {**curves, **self.side_by_side.plot_items()}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        metric = self.current_metric()
        tables = self.side_by_side.tables()
        if metric:
            tables[metric] = metric_table([e.curves for e in self.entries.values()], metric)
        return tables

    def flush_pending_draws(self) -> None:
        """This window's curve, held back while a model opens or trains (by its timer, or while
        the panel is out of sight), now."""
        if self.window_timer.isActive():
            self.window_timer.stop()
            self._held_draws[self._update_window_entry] = ()
        self.draw_held()

    def shutdown(self) -> None:
        self.follow_timer.stop()
        super().shutdown()


def _summary(follower: RunFollower) -> str:
    try:
        return config_summary(follower.reader.config())
    except UserError:
        return ""


def _swatch(colour: str) -> QIcon:
    pixmap = QPixmap(12, 12)
    pixmap.fill(QColor(colour))
    return QIcon(pixmap)
