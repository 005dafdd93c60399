"""BLEU: the live validation curve, the n-gram breakdown behind the score, and one example sentence
with the n-grams it shares with its reference highlighted.

BLEU = BP · exp(Σ_n ¼ log p_n), p_n = clipped n-gram matches / hypothesis n-grams,
BP = min(1, exp(1 - r/c)) for hypothesis length c and reference length r.
"""

from __future__ import annotations

import html
from collections import Counter

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from explorer.export.bleu import MAX_ORDER, bleu_history, bleu_tables, with_evaluation
from explorer.families import family_of
from explorer.ui.bleu_file_row import NO_SOURCE as NOT_TRANSLATING, ParallelFileRow
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState, no_curves_reason
from explorer.ui.live_plots import GrowingBuffer, place_marker, step_marker
from explorer.ui.panels.base import Panel
from explorer.ui.plot_style import readable_axes

# Background of a token by the longest matched n-gram covering it: 1-gram pale ... 4-gram strong.
MATCH_COLOURS = {1: "#fde68a", 2: "#fbbf24", 3: "#f59e0b", 4: "#d97706"}


def matched_orders(
    hypothesis: list[str], reference: list[str], max_order: int = MAX_ORDER
) -> list[int]:
    """For each hypothesis token, the longest n of a clipped-matched n-gram covering it (0: none).

    Clipping as in BLEU: an n-gram counts at most as often as it occurs in the reference; the
    leftmost occurrences in the hypothesis take the matches.
    """
    orders = [0] * len(hypothesis)
    for n in range(1, max_order + 1):
        available = Counter(tuple(reference[i : i + n]) for i in range(len(reference) - n + 1))
        for i in range(len(hypothesis) - n + 1):
            gram = tuple(hypothesis[i : i + n])
            if available[gram] > 0:
                available[gram] -= 1
                for j in range(i, i + n):
                    orders[j] = max(orders[j], n)
    return orders


def highlight_html(tokens: list[str], orders: list[int]) -> str:
    """Tokens as rich text, each matched one on the colour of its longest matched n-gram."""
    parts = []
    for token, order in zip(tokens, orders):
        text = html.escape(token)
        if order:
            parts.append(
                f'<span style="background-color:{MATCH_COLOURS[order]}; color:#111;" '
                f'title="in a matched {order}-gram">{text}</span>'
            )
        else:
            parts.append(text)
    return " ".join(parts)


def orders_from_matches(length: int, matched) -> list[int]:
    """Per token, the longest n among BLEU's matched n-grams `(n, start, tokens)` that cover it."""
    orders = [0] * length
    for n, start, _ in matched:
        for j in range(start, min(start + n, length)):
            orders[j] = max(orders[j], n)
    return orders


PLOT_MIN_LINES = 8  # the BLEU plot's least height, in lines of text


class BleuPanel(Panel):
    PANEL_ID = "bleu"
    TITLE = "BLEU"
    TOOLTIP = (
        "Validation BLEU of greedy decodes: BP · exp(mean log p_n) over clipped n-gram "
        "precisions p_1..p_4, with BP = min(1, exp(1 − r/c))."
    )

    def __init__(self, bus: AppBus, parent: QWidget | None = None) -> None:
        super().__init__(bus, parent)
        self.history = GrowingBuffer(2, capacity=64)  # (step, bleu)
        self.breakdown = None
        self.example = None

        self.plot_widget = pg.PlotWidget(
            axisItems=readable_axes("left", "bottom", whole=("bottom",)))
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setLabel("bottom", "step")
        self.plot.setLabel("left", "BLEU")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setDownsampling(auto=True, mode="peak")
        self.plot.setClipToView(True)
        self.curve = self.plot.plot(
            pen=pg.mkPen((150, 80, 200), width=2), symbol="o", symbolSize=5,
            symbolBrush=(150, 80, 200), symbolPen=None,
        )
        self.plot_widget.setToolTip("Corpus BLEU (0-100) of greedy decodes on validation sentences")

        self.table = QTableWidget(MAX_ORDER, 4)
        # two-line headers: a dock a third of the screen wide still fits every column's title
        self.table.setHorizontalHeaderLabels(
            ["n", "clipped\nmatches", "hypothesis\nn-grams", "p_n"])
        self.table.verticalHeader().setVisible(False)
        # rows as tall as their text (Qt's default is half as tall again): the four fit a small dock
        line = self.table.fontMetrics().height()
        self.table.verticalHeader().setDefaultSectionSize(line + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # as tall as the header and the four rows, whatever the font: no row hides behind the text
        self.table.setSizeAdjustPolicy(QAbstractScrollArea.SizeAdjustPolicy.AdjustToContents)
        self.table.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.table.setToolTip(
            "Clipped counts: each hypothesis n-gram matches at most as often as it occurs in the "
            "reference; p_n = clipped matches / hypothesis n-grams."
        )
        self.summary = QLabel("No BLEU yet: it is computed on validation sentences (seq2seq).")
        # two fixed lines rather than word wrap: a wrapped label's height is only known once laid
        # out, and the layout squeezed the table's last row under it
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary.setToolTip("BP = min(1, exp(1 − r/c)); c, r: hypothesis, reference length")
        self.example_view = QTextBrowser()
        self.example_view.setMinimumHeight(60)
        # its three lines and a margin: the room it took beyond them squashed the plot to ~45 px
        self.example_view.setMaximumHeight(6 * line)
        # a readable plot: a few y ticks between the axis labels (tall screens stack docks)
        self.plot_widget.setMinimumHeight(PLOT_MIN_LINES * line)
        self.example_view.setToolTip(
            "One validation sentence: hypothesis tokens shared with the reference are highlighted "
            "by the longest matched n-gram (pale: 1-gram … dark: 4-gram)."
        )

        self.details = details = QWidget()
        details.hide()  # an empty table and a blank box until a first BLEU: the plot says why
        details_layout = QVBoxLayout(details)
        details_layout.setContentsMargins(0, 0, 0, 0)
        details_layout.addWidget(self.table)
        details_layout.addWidget(self.summary)
        details_layout.addWidget(self.example_view)
        self.plot_state = EmptyState(self.plot_widget)  # no empty axes before a BLEU point
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.plot_state)
        splitter.addWidget(details)
        splitter.setStretchFactor(0, 1)  # the plot takes the room the details do not need
        splitter.setStretchFactor(1, 0)
        splitter.setChildrenCollapsible(False)  # never squeeze the table's rows under the text
        self.file_row = ParallelFileRow(self.job_runner("file"), bus)
        self.file_row.scored.connect(self.show_file_bleu)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.file_row)
        layout.addWidget(splitter)

        self.step_line = step_marker()
        self.plot.addItem(self.step_line, ignoreBounds=True)
        bus.eval_metrics.connect(self.add_eval)
        bus.workspace_changed.connect(self.on_workspace)
        bus.run_curves.connect(self.on_run_curves)
        bus.run_changed.connect(self.on_run_changed)
        bus.run_step.connect(lambda step: place_marker(self.step_line, step))
        self.draw_history()

    def on_workspace(self, workspace) -> None:
        """A different workspace replaces the curve with its history; the same one keeps it."""
        if not self.bus.state.same_model:
            self.show_history(workspace)

    def show_history(self, workspace) -> None:
        self.file_row.set_workspace(workspace)
        if self.bus.shows_run(workspace):
            return  # a snapshot of the run on show: the run's whole curve stays
        self.breakdown = self.example = None  # the model before's sentences are not this one's
        self.details.hide()
        self.example_view.clear()
        self.history.clear()
        self.history.extend(bleu_history(getattr(workspace, "history", None)))
        self.draw_history()

    def on_run_curves(self, update) -> None:
        """A recorded run's BLEU (explorer/ui/run_session.py): all of it, or what was appended."""
        steps, bleu = update.curves.eval["step"], update.curves.eval["bleu"]
        if update.reset:
            self.history.clear()
        recorded = np.isfinite(bleu)
        self.history.extend(np.column_stack([steps[recorded], bleu[recorded]]))  # (N, 2)
        self.draw_history()

    def draw_history(self) -> None:
        self.curve.setData(self.history.view()[:, 0], self.history.view()[:, 1])
        workspace = self.bus.workspace
        if self.history.size:
            self.plot_state.show_view()
        elif workspace is not None and not self.applies_to(workspace):
            self.plot_state.show_message(NOT_TRANSLATING)
        else:
            self.plot_state.show_message(no_curves_reason(workspace, "BLEU points"))

    def on_run_changed(self, run) -> None:
        if run is None:  # the run closed: the workspace's own history again (none: empty)
            self.show_history(self.bus.workspace)

    def add_eval(self, metrics) -> None:
        if metrics.bleu is None:
            return
        rows = with_evaluation(self.history.view(), metrics)
        if rows is not None:  # in step order: a snapshot evaluated after later steps goes between
            self.history.clear()
            self.history.extend(rows)
            self.draw_history()
        if metrics.bleu_detail is not None:
            self.show_breakdown(metrics.bleu_detail)
        if metrics.example is not None:
            self.show_example(metrics.example)

    def show_file_bleu(self, scored) -> None:
        """The BLEU of a parallel file (explorer.decoding.file_bleu.FileBleu): its breakdown and
        first sentence replace the validation ones until the next evaluation."""
        self.show_breakdown(scored.result)
        self.show_example(scored.example)

    def show_breakdown(self, breakdown) -> None:
        self.breakdown = breakdown
        self.details.show()
        for n in range(MAX_ORDER):
            values = (
                str(n + 1),
                str(int(breakdown.counts[n])),
                str(int(breakdown.totals[n])),
                f"{breakdown.precisions[n]:.2f}%",
            )
            for col, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                self.table.setItem(n, col, item)
        self.summary.setText(
            f"BLEU = {breakdown.score:.2f}   BP = {breakdown.bp:.3f}\n"
            f"c (hypothesis length) = {breakdown.sys_len}   "
            f"r (reference length) = {breakdown.ref_len}{_unit(breakdown.signature)}"
        )

    def show_example(self, example) -> None:
        """An explorer.metrics.bleu.SentenceExample: BLEU tokens and the matched n-grams."""
        self.example = example
        hyp_tokens, ref_tokens = list(example.hyp_tokens), list(example.ref_tokens)
        hyp_orders = orders_from_matches(len(hyp_tokens), example.matched)
        ref_orders = matched_orders(ref_tokens, hyp_tokens)  # the matches seen from the reference
        self.example_orders = (hyp_orders, ref_orders)
        legend = " ".join(
            f'<span style="background-color:{colour}; color:#111;">&nbsp;{n}-gram&nbsp;</span>'
            for n, colour in MATCH_COLOURS.items()
        )
        rows = []
        rows.append(f"<b>hypothesis</b>: {highlight_html(hyp_tokens, hyp_orders)}")
        rows.append(f"<b>reference</b>: {highlight_html(ref_tokens, ref_orders)}")
        rows.append(f"<small>longest match: {legend}</small>")
        self.example_view.setHtml("<br>".join(rows))

    # -- Panel contract --------------------------------------------------------------------------

    def applies_to(self, workspace) -> bool:
        """BLEU scores translations: an encoder-decoder's, never a language model's."""
        return workspace is None or family_of(workspace.model).has_source

    def has_content(self) -> bool:
        return self.history.size > 0 or self.breakdown is not None

    def plot_items(self) -> dict[str, object]:
        return {} if self.plot_state.empty else {"bleu": self.plot}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return bleu_tables(self.history.view(), self.breakdown)


def _unit(signature: str) -> str:
    """What c and r count, from sacreBLEU's signature: "characters" for tok:char, else nothing
    (13a words are BLEU's usual unit)."""
    return ", in characters" if "tok:char" in signature else ""
