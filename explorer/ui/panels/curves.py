"""Training curves: loss, perplexity, token accuracy, learning rate and gradient norm against step.

Points live in growing numpy buffers (amortised doubling) and are handed to pyqtgraph as views, with
peak downsampling and clip-to-view, so a 100,000-step run stays smooth.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QVBoxLayout
from superqt.utils import qthrottled

from explorer.export.curves import (
    EVAL_COLUMNS, TRAIN_COLUMNS, curve_tables, eval_row, history_rows, perplexity,
)
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState, no_curves_reason
from explorer.ui.live_plots import (
    MAX_REDRAW_INTERVAL_MS, REDRAW_BUDGET, REDRAW_INTERVAL_MS, GrowingBuffer,
    place_marker, step_marker,
)
from explorer.ui.panels.base import Panel
from explorer.ui.plot_message import PlotMessage
from explorer.ui.plot_style import SteadyViewBox, add_legend_row, readable_axes


# Where each plot goes, (row, column, columns spanned), in a grid of 3 columns and, when the dock
# is too narrow for three plots of MIN_PLOT_PX, of 2; the gradient norm spans two columns: its
# before/after-clipping band needs the room. The legend takes the row under the plots.
GRIDS = {
    3: {"loss": (0, 0, 1), "perplexity": (0, 1, 1), "accuracy": (0, 2, 1), "lr": (1, 0, 1),
        "grad_norm": (1, 1, 2)},
    2: {"loss": (0, 0, 1), "perplexity": (0, 1, 1), "accuracy": (1, 0, 1), "lr": (1, 1, 1),
        "grad_norm": (2, 0, 2)},
}
MIN_PLOT_PX = 200  # a plot's axis, tick labels and a readable curve
# which buffers draw in each plot, and what a plot says while they hold nothing (another plot may
# have points: a model shown with its evaluations but no recorded steps)
PLOT_SOURCES = {"accuracy": "evals", "lr": "train", "grad_norm": "train"}
NO_STEPS = "No steps yet: Train (Ctrl+T) draws {}."  # fits a 2-column plot at 1280 x 800
PLOT_EMPTY = {"accuracy": "No evaluation yet: it draws accuracy.",
              "lr": NO_STEPS.format("lr"), "grad_norm": NO_STEPS.format("‖g‖")}

# Columns of the per-step buffer and of the per-evaluation buffer.
def run_rows(curves) -> tuple[np.ndarray, np.ndarray]:
    """A run's columns (explorer.runs.Curves) as rows of TRAIN_COLUMNS and EVAL_COLUMNS."""
    train, evals = curves.train, curves.eval
    loss = train["loss"]
    clipped = np.where(np.isnan(train["grad_norm_clipped"]), train["grad_norm"],
                       train["grad_norm_clipped"])
    train_rows = np.column_stack([train["step"], loss, np.exp(np.minimum(loss, 50.0)),
                                  train["lr"], train["grad_norm"], clipped])  # (N, 6)
    measured = np.isfinite(evals["val_loss"])  # a BLEU-only evaluation has no point here
    val_loss = evals["val_loss"][measured]
    perplexity = np.where(np.isnan(evals["perplexity"][measured]),
                          np.exp(np.minimum(val_loss, 50.0)), evals["perplexity"][measured])
    eval_rows = np.column_stack([evals["step"][measured], val_loss, perplexity,
                                 evals["token_accuracy"][measured]])  # (M, 4)
    return train_rows, eval_rows


class TimedGraphicsLayoutWidget(pg.GraphicsLayoutWidget):
    """A GraphicsLayoutWidget that remembers how long its last paint took."""

    last_paint_s = 0.0

    def paintEvent(self, event) -> None:
        started = time.perf_counter()
        super().paintEvent(event)
        self.last_paint_s = time.perf_counter() - started


class TrainingCurvesPanel(Panel):
    PANEL_ID = "curves"
    TITLE = "Training curves"
    TOOLTIP = (
        "Training and validation loss, perplexity (exp of the loss), token accuracy, learning rate "
        "and the global gradient norm before and after clipping to τ."
    )

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.train = GrowingBuffer(len(TRAIN_COLUMNS))
        self.evals = GrowingBuffer(len(EVAL_COLUMNS), capacity=64)
        self._stale = {"train", "evals"}  # the buffers that changed since the curves last saw them

        self.view = TimedGraphicsLayoutWidget()
        self.view.setToolTip(self.TOOLTIP)
        self.plots: dict[str, pg.PlotItem] = {}
        for name, ylabel in (("loss", "loss"), ("perplexity", "perplexity"),
                             ("accuracy", "accuracy"), ("lr", "lr"), ("grad_norm", "‖g‖")):
            row, col, colspan = GRIDS[3][name]
            plot = self.view.addPlot(row=row, col=col, colspan=colspan,
                                     axisItems=readable_axes("left", "bottom",
                                                             whole=("bottom",)),
                                     viewBox=SteadyViewBox())
            plot.setLabel("bottom", "step")
            plot.setLabel("left", ylabel)
            plot.showGrid(x=True, y=True, alpha=0.2)
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            self.plots[name] = plot
        for name in ("perplexity", "grad_norm"):
            self.plots[name].setLogMode(y=True)
        # the per-step curves are 1 px wide: antialiased, a 1.5 px path of a few thousand points
        # took twice as long to draw at every live redraw (issue 37); the evaluations' few points
        # keep 2 px
        train_pen = pg.mkPen((70, 130, 230), width=1)
        val_pen = pg.mkPen((230, 120, 40), width=2)
        val_symbol = dict(symbol="o", symbolSize=5, symbolBrush=(230, 120, 40), symbolPen=None)
        self.curves = {
            "train_loss": self.plots["loss"].plot(pen=train_pen, name="train"),
            "val_loss": self.plots["loss"].plot(pen=val_pen, name="validation", **val_symbol),
            "train_ppl": self.plots["perplexity"].plot(pen=train_pen, name="train"),
            "val_ppl": self.plots["perplexity"].plot(pen=val_pen, name="validation", **val_symbol),
            "val_acc": self.plots["accuracy"].plot(pen=val_pen, name="validation", **val_symbol),
            "lr": self.plots["lr"].plot(pen=pg.mkPen((60, 170, 90), width=1), name="lr"),
            "grad": self.plots["grad_norm"].plot(
                pen=pg.mkPen((200, 60, 60), width=1), name="before clipping"
            ),
            "grad_clipped": self.plots["grad_norm"].plot(
                # not the train loss's blue: the two share the legend row
                pen=pg.mkPen((20, 150, 150), width=1), name="after clipping"
            ),
        }
        # one legend row under all the plots: inside a plot this small it would cover the curves
        self.legend = add_legend_row(self.view.ci, row=2, colspan=3, curves=[
            (self.curves["train_loss"], "train"), (self.curves["val_loss"], "validation"),
            (self.curves["grad"], "‖g‖ before clipping"),
            (self.curves["grad_clipped"], "‖g‖ after clipping"),
        ], text_size="8pt")
        self.columns = 3
        self.tau_line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen((120, 120, 120), style=pg.QtCore.Qt.DashLine))
        self.tau_line.setVisible(False)
        self.plots["grad_norm"].addItem(self.tau_line, ignoreBounds=True)
        # "τ = 1" is named on the right axis, beside the plot: inside it sat over the curve
        self.tau_axis = self.plots["grad_norm"].getAxis("right")
        self.tau_axis.setStyle(tickLength=0)
        self.tau_axis.setPen(pg.mkPen(None))
        self.clip: float | None = None
        self.plot_messages = {name: PlotMessage(self.plots[name]) for name in PLOT_EMPTY}
        self.step_lines = {name: step_marker() for name in self.plots}
        for name, line in self.step_lines.items():
            self.plots[name].addItem(line, ignoreBounds=True)

        self.readout = QLabel("Hover over a plot to read exact values.")
        self.readout.setToolTip("Exact values at the step under the mouse")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        self.view_state = EmptyState(self.view)  # no empty axes before any step: one line why
        layout.addWidget(self.view_state, 1)
        layout.addWidget(self.readout)
        self._hover = pg.SignalProxy(
            self.view.scene().sigMouseMoved, rateLimit=30, slot=self._on_hover
        )
        bus.step_metrics.connect(self.add_steps)
        bus.eval_metrics.connect(self.add_eval)
        bus.workspace_changed.connect(self.on_workspace)
        bus.train_config_changed.connect(self.on_train_config)
        bus.training_state.connect(self.on_training_state)
        bus.run_curves.connect(self.on_run_curves)
        bus.run_changed.connect(self.on_run_changed)
        bus.run_step.connect(self.mark_step)
        self.view_state.set_message(no_curves_reason(bus.workspace, "training curves"))

    # -- data in ---------------------------------------------------------------------------------

    def add_steps(self, steps) -> None:
        if not steps:
            return
        rows = np.array(
            [
                (s.step, s.loss, perplexity(s.loss), s.lr, s.grad_norm, s.grad_norm_clipped)
                for s in steps
            ],
            dtype=np.float64,
        )  # (N, len(TRAIN_COLUMNS))
        self.train.extend(rows)
        self._stale.add("train")
        self._schedule_redraw()

    def add_eval(self, metrics) -> None:
        # in step order; a re-evaluation of the same weights (a snapshot's) replaces its row
        self.evals.upsert(eval_row(metrics))
        self._stale.add("evals")
        self._schedule_redraw()

    def on_workspace(self, workspace) -> None:
        """A different workspace replaces the curves with its history; the same one keeps them."""
        if not self.bus.state.same_model:
            self.show_history(workspace)

    def show_history(self, workspace) -> None:
        self.on_train_config(getattr(workspace, "train_config", None))
        if self.bus.shows_run(workspace):
            return  # a snapshot of the run on show: the run's whole curves stay
        self.train.clear()
        self.evals.clear()
        train_rows, eval_rows = history_rows(getattr(workspace, "history", None))
        self.train.extend(train_rows)
        self.evals.extend(eval_rows)
        self._stale.update(("train", "evals"))
        self.redraw()
        for plot in self.plots.values():  # no range of the model before: this one's own
            plot.getViewBox().refit()

    def on_run_curves(self, update) -> None:
        """A recorded run's rows (explorer/ui/run_session.py): all of them, or those appended."""
        if update.reset:
            self.train.clear()
            self.evals.clear()
        train_rows, eval_rows = run_rows(update.curves)
        self.train.extend(train_rows)
        self.evals.extend(eval_rows)
        self._stale.update(("train", "evals"))
        if update.reset:
            self.redraw()
            for plot in self.plots.values():
                plot.getViewBox().refit()
        else:
            self._schedule_redraw()

    def on_run_changed(self, run) -> None:
        if run is None:  # the run closed: the workspace's own history again (none: empty)
            self.show_history(self.bus.workspace)

    def mark_step(self, step) -> None:
        """A vertical line at the step of the run's snapshot the panels show (None: none)."""
        for line in self.step_lines.values():
            place_marker(line, step)

    def on_train_config(self, train_config) -> None:
        clip = getattr(train_config, "clip", None) if train_config is not None else None
        self.clip = float(clip) if clip else None
        self._show_tau()
        if self.clip is not None:
            self.tau_line.setValue(math.log10(self.clip))  # the axis is in log10 units
            self.tau_axis.setTicks([[(math.log10(self.clip), f"τ = {self.clip:.3g}")], []])

    def _show_tau(self) -> None:
        """The clipping threshold's line and name, on a plot of norms that has any."""
        shown = self.clip is not None and not self.plot_messages["grad_norm"].message
        self.tau_line.setVisible(shown)
        self.plots["grad_norm"].showAxis("right", shown)

    def on_training_state(self, state: str) -> None:
        target = self.bus.state.training.target_steps
        if state == "running" and target:  # the step axis is laid out once for the run
            first = self.train.view()[0, 0] if self.train.size else getattr(self.bus.workspace, "step", 0)
            for plot in self.plots.values():
                plot.getViewBox().plan_x(min(first, target), target)
            return
        if state != "running":  # the curves stopped growing: draw the last batches, no headroom
            self.flush_pending_draws()
            for plot in self.plots.values():
                plot.getViewBox().refit()

    # -- drawing ---------------------------------------------------------------------------------

    @qthrottled(timeout=REDRAW_INTERVAL_MS)
    def _schedule_redraw(self) -> None:
        self.redraw()

    def redraw(self, force: bool = False) -> None:
        """Hand the changed buffers to their curves now (normally at most once per redraw
        interval); the evaluations change a few times a run, the steps at every batch. Out of
        sight (a dock behind another's tab) the curves wait until they are shown, unless `force`."""
        self._schedule_redraw.cancel()
        self.view_state.set_message(None if self.has_content() else no_curves_reason(
            self.bus.workspace, "training curves"))
        sizes = {"train": self.train.size, "evals": self.evals.size}
        for name, message in self.plot_messages.items():
            message.set_message(None if sizes[PLOT_SOURCES[name]] else PLOT_EMPTY[name])
        self._show_tau()
        if not (force or (self.isVisible() and self.in_sight())):
            return
        started = time.perf_counter()
        train, evals = self.train.view(), self.evals.view()
        if "train" in self._stale:
            step = train[:, 0]
            self.curves["train_loss"].setData(step, train[:, 1])
            self.curves["train_ppl"].setData(step, train[:, 2])
            self.curves["lr"].setData(step, train[:, 3])
            # log axis: a zero norm cannot be shown (pyqtgraph would drop it anyway)
            self.curves["grad"].setData(step, np.maximum(train[:, 4], 1e-12))
            self.curves["grad_clipped"].setData(step, np.maximum(train[:, 5], 1e-12))
        if "evals" in self._stale:
            eval_step = evals[:, 0]
            self.curves["val_loss"].setData(eval_step, evals[:, 1])
            self.curves["val_ppl"].setData(eval_step, evals[:, 2])
            self.curves["val_acc"].setData(eval_step, evals[:, 3])
        self._stale.clear()
        # settle ranges and view matrices now: settled during the paint, they ask for a second one
        self.view.scene().prepareForPaint()
        cost_s = time.perf_counter() - started + self.view.last_paint_s
        interval_ms = min(max(REDRAW_INTERVAL_MS, 1000 * cost_s / REDRAW_BUDGET),
                          MAX_REDRAW_INTERVAL_MS)
        self._schedule_redraw.setTimeout(int(interval_ms))

    def flush_pending_draws(self) -> None:
        self.redraw(force=True)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        columns = 3 if self.width() >= 3 * MIN_PLOT_PX else 2
        if columns != self.columns:
            self.arrange_plots(columns)

    def arrange_plots(self, columns: int) -> None:
        """Lay the plots out `columns` (3 or 2) wide, the legend in the row under them. Items
        move inside the Qt grid (never out of the scene), and pyqtgraph's own record follows."""
        layout = self.view.ci
        grid = layout.layout  # QGraphicsGridLayout
        placed = [(plot, *GRIDS[columns][name]) for name, plot in self.plots.items()]
        legend_row = 1 + max(row for _, row, _, _ in placed)
        placed.append((self.legend, legend_row, 0, columns))
        for item, *_ in placed:
            grid.removeAt(layout.itemIndex(item))
        layout.rows.clear()
        for item, row, col, colspan in placed:
            grid.addItem(item, row, col, 1, colspan)
            layout.items[item] = [(row, col + i) for i in range(colspan)]
            for cell in layout.items[item]:
                layout.rows.setdefault(cell[0], {})[cell[1]] = item
        for row in range(grid.rowCount()):  # plots share the height; the legend, none to spare
            grid.setRowStretchFactor(row, 1 if row < legend_row else 0)
        self.columns = columns
        grid.activate()

    def sight_changed(self, in_sight: bool) -> None:
        super().sight_changed(in_sight)
        if in_sight and self._stale:
            self.redraw()

    def _on_hover(self, event) -> None:
        position = event[0]
        for name, plot in self.plots.items():
            if plot.sceneBoundingRect().contains(position):
                step = plot.vb.mapSceneToView(position).x()
                self.readout.setText(self.describe_step(step))
                return

    def describe_step(self, step: float) -> str:
        """The exact values at the recorded step nearest to `step`."""
        parts = []
        data = self.train.view()
        if len(data):
            i = int(np.clip(np.searchsorted(data[:, 0], step), 0, len(data) - 1))
            if i > 0 and abs(data[i - 1, 0] - step) < abs(data[i, 0] - step):
                i -= 1
            s, loss, ppl, lr, g, gc = data[i]
            parts.append(
                f"step {int(s)}: loss {loss:.4f}, perplexity {ppl:.3f}, lr {lr:.3g}, "
                f"‖g‖ {g:.4g} → {gc:.4g}"
            )
        evals = self.evals.view()
        if len(evals):
            j = int(np.argmin(np.abs(evals[:, 0] - step)))
            s, vl, vp, acc = evals[j]
            parts.append(f"val @ {int(s)}: loss {vl:.4f}, perplexity {vp:.3f}, accuracy {acc:.2%}")
        return " | ".join(parts) or "No data yet."

    # -- Panel contract --------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.train.size > 0 or self.evals.size > 0

    def plot_items(self) -> dict[str, object]:
        if self.view_state.empty:
            return {}
        shown = {name: plot for name, plot in self.plots.items()  # an empty plot is no figure
                 if name not in self.plot_messages or not self.plot_messages[name].message}
        return {"all": self.view.ci, **shown}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return curve_tables(self.train.view(), self.evals.view())
