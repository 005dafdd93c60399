"""Greedy, beam and sampling outputs for the same input, side by side, with score and BLEU.

Each output shows its model score (log p of the whole output, <eos> included) and, given a
reference, its sentence BLEU with the matched n-grams highlighted (darker = longer n-gram).
"Find an example where beam beats greedy" searches the workspace's validation inputs for the
lecture notes' case: greedy commits to the locally best word and misses a more probable output.
Under each card its output's tokens: click one and the attribution view explains it ("why this
token?"), with that output before it, as a step-through step or a beam-tree node does.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced

from explorer.analysis.beam_text import log_p
from explorer.decoding.jobs import SEARCH_LIMIT, run_compare, run_find_example
from explorer.export.compare import compare_tables, opening_pair
from explorer.ui.empty_state import EmptyState
from explorer.ui.panels.base import Panel
from explorer.ui.panels.decode_form import DecodeSettingsForm
from explorer.ui.panels.decoding_widgets import BarChart, show_text
from explorer.ui.token_strip import TokenStrip

NO_MODEL = "Open or create a model: greedy, beam and sampled outputs of the source are compared here."
STRATEGY_TITLES = {"greedy": "Greedy", "beam": "Beam search", "sample": "Sampling"}
NGRAM_COLORS = {1: "#fff2a8", 2: "#ffd280", 3: "#ffae5c", 4: "#ff8a50"}  # background per n
MATCH_TEXT = "#111111"  # the light backgrounds need dark text in a dark theme too


def highlight_matches(tokens: list[str], matched) -> str:
    """Rich text of `tokens` with each token's background coloured by the longest matched n-gram
    that covers it (BLEU's clipped matches, from explorer.metrics.bleu.matched_ngrams)."""
    longest = [0] * len(tokens)
    for n, start, _ in matched:
        for position in range(start, min(start + n, len(tokens))):
            longest[position] = max(longest[position], n)
    words = []
    for token, n in zip(tokens, longest):
        text = html.escape(token)
        color = NGRAM_COLORS.get(min(n, 4))
        words.append(f'<span style="background-color:{color}; color:{MATCH_TEXT}">{text}</span>'
                     if color else text)
    return " ".join(words)


def legend_html() -> str:
    cells = " ".join(f'<span style="background-color:{c}; color:{MATCH_TEXT}">&nbsp;{n}-gram&nbsp;</span>'
                     for n, c in NGRAM_COLORS.items())
    return f"Matched with the reference: {cells}"


class ComparePanel(Panel):
    PANEL_ID = "compare"
    TITLE = "Greedy vs beam vs sampling"
    TOOLTIP = "The same input decoded three ways, with model score and sentence BLEU"

    compared = Signal()  # new outputs are shown
    example_found = Signal(object)  # explorer.decoding.examples.BeamBeatsGreedy or None

    def __init__(self, bus, parent: QWidget | None = None) -> None:
        super().__init__(bus, parent)
        self.outputs = []
        self.outputs_input = None  # (source, reference, DecodeSettings) `outputs` were decoded with
        self._newest_input = None  # ... and the newest compare job's
        self.example = None
        self._build()
        self.jobs = self.job_runner("decode")
        self.jobs.done.connect(self._on_result)
        self.jobs.failed.connect(self._on_failed)
        self.request_compare = qdebounced(self.compare, timeout=250, parent=self)
        self.form.changed.connect(lambda: self.request_compare())
        bus.workspace_changed.connect(self.set_workspace)
        if bus.workspace is not None:
            self.set_workspace(bus.workspace)

    def _build(self) -> None:
        self.source_box = QLineEdit()
        self.source_box.setPlaceholderText("Source sentence (or prompt)")
        self.reference_box = QLineEdit()
        self.reference_box.setPlaceholderText("Reference translation (optional, for BLEU)")
        for box in (self.source_box, self.reference_box):
            box.returnPressed.connect(self.compare)

        self.form = DecodeSettingsForm(("beam_size", "alpha", "temperature", "top_k", "top_p",
                                        "seed", "max_len"), short=True)
        decode = QPushButton("Decode")
        decode.clicked.connect(self.compare)
        self.find_button = QPushButton("Find an example where beam beats greedy")
        self.find_button.setToolTip("Decode the validation inputs with greedy and beam search "
                                    "and show the one where beam's output is most probable "
                                    "relative to greedy's")
        self.find_button.clicked.connect(self.find_example)

        text_row = QHBoxLayout()
        text_row.addWidget(QLabel("Source"))
        text_row.addWidget(self.source_box, 1)
        text_row.addWidget(QLabel("Reference"))
        text_row.addWidget(self.reference_box, 1)
        option_row = QHBoxLayout()
        option_row.addWidget(self.form)
        option_row.addStretch(1)
        button_row = QHBoxLayout()
        button_row.addWidget(decode)
        button_row.addWidget(self.find_button)
        button_row.addStretch(1)
        button_row.addWidget(QLabel(legend_html()))

        grid = QGridLayout()
        self.cells = {}
        self.strips = {}  # why this token: each output's tokens, clickable
        for col, (key, title) in enumerate(STRATEGY_TITLES.items()):
            cell = QLabel()
            cell.setTextFormat(Qt.RichText)
            cell.setWordWrap(True)
            cell.setAlignment(Qt.AlignTop | Qt.AlignLeft)
            cell.setTextInteractionFlags(Qt.TextSelectableByMouse)
            cell.setStyleSheet("QLabel { border: 1px solid #cccccc; padding: 6px; }")
            cell.hide()  # shown with the first outputs: no empty cards before
            grid.addWidget(cell, 0, col)
            grid.setColumnStretch(col, 1)
            self.cells[key] = cell
            strip = TokenStrip()
            strip.setToolTip(f"Why this token? Click a token of the {title.lower()} output: the "
                             "attribution view explains it, with the output before it")
            strip.token_clicked.connect(lambda index, key=key: self._explain_token(key, index))
            grid.addWidget(strip, 1, col)
            self.strips[key] = strip
        self.explanation = QLabel()
        self.explanation.setWordWrap(True)
        self.explanation.setTextFormat(Qt.RichText)
        self.explanation.hide()  # shown with an example's explanation
        self.status = QLabel()  # with no model the charts' place says why
        self.chart_widget = pg.GraphicsLayoutWidget()
        self.score_chart = BarChart(self.chart_widget.addPlot(row=0, col=0), "")
        self.score_chart.set_title("−log p of each output (shorter = more probable)")
        self.bleu_chart = BarChart(self.chart_widget.addPlot(row=0, col=1), "",
                                   value_format="{:.1f}")
        self.bleu_chart.set_title("sentence BLEU against the reference")
        self.chart_widget.setMinimumHeight(110)  # three bars with their labels

        root = QVBoxLayout(self)
        for row in (text_row, option_row, button_row):
            root.addLayout(row)
        # the cards take the height their text needs (_fit_cards), in a scroll area: the panel's
        # least height is not theirs, which held the whole tab group (the beam tree's) 460 px tall
        # and took the attention heatmap's rows their height at 1920 x 1080
        cards = QWidget()
        cards_layout = QVBoxLayout(cards)
        cards_layout.setContentsMargins(0, 0, 0, 0)
        cards_layout.addLayout(grid)
        cards_layout.addWidget(self.explanation)
        self.card_grid = grid
        self.cards_area = QScrollArea()
        self.cards_area.setWidgetResizable(True)
        self.cards_area.setFrameShape(QFrame.Shape.NoFrame)
        self.cards_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.cards_area.setWidget(cards)
        root.addWidget(self.cards_area)
        # no empty cards or axes before the first outputs: one line why in their place
        self.chart_view = EmptyState(self.chart_widget, NO_MODEL)
        root.addWidget(self.chart_view, 1)
        root.addWidget(self.status)

    # ---- decoding --------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        self.example = None
        self.explanation.clear()
        self.explanation.hide()
        if workspace is None:
            self.outputs, self.outputs_input = [], None
            self._show()
            self.status.setText("")
            return
        pair = opening_pair(workspace)
        if pair is not None and not self.source_box.text():
            show_text(self.source_box, pair[0])
            show_text(self.reference_box, pair[1])
        self.compare()

    def set_source(self, source: str, reference: str = "") -> None:
        show_text(self.source_box, source)
        show_text(self.reference_box, reference)
        self.compare()

    def compare(self) -> int:
        if self.workspace is None:
            return -1
        self.status.setText("Decoding…")
        if not self.outputs:
            self.chart_view.show_message("Decoding…")
        self._newest_input = (self.source_box.text(), self.reference_box.text(),
                              self.form.settings())
        return self.jobs.submit(run_compare, self.workspace, *self._newest_input)

    def find_example(self) -> int:
        if self.workspace is None:
            self.status.setText("Open a trained model (e.g. a demo checkpoint) to search it.")
            return -1
        self.status.setText("Searching the validation inputs for beam beating greedy…")
        self.find_button.setEnabled(False)
        return self.jobs.submit(run_find_example, self.workspace, self.form.settings(), SEARCH_LIMIT)

    def _on_failed(self, _job: int, message: str) -> None:
        self.find_button.setEnabled(True)
        self.status.setText(f"Could not decode: {message}")
        if not self.outputs:
            self.chart_view.show_message(f"Could not decode: {message}")

    def _on_result(self, _job: int, result) -> None:
        self.find_button.setEnabled(True)
        if isinstance(result, list):
            # the runner delivers only its newest job's answer: the last compare()'s
            self.outputs, self.outputs_input = result, self._newest_input
            self._show()
            self.status.setText("" if self.has_bleu() else
                                "No BLEU chart: type a reference to score the outputs against.")
            self.compared.emit()
            return
        self._on_example(result)

    def _on_example(self, example) -> None:
        self.example = example
        self.explanation.show()
        self.example_found.emit(example)
        if example is None:
            self.explanation.setText("On these inputs greedy already finds the most probable output "
                                     "beam search finds: no example. Train longer or widen the beam.")
            return
        self.explanation.setText(
            f"<b>Beam beats greedy</b> (found among {example.searched} validation inputs, width "
            f"{example.width}): {html.escape(example.explanation())} As in the lecture notes: "
            "p(Those) &gt; p(Apples), yet p(Apples are good) &gt; p(Those apples are good).")
        # compare plain probabilities (α = 0), as the notes do, at the width that found it
        self.form.set_values(alpha=0.0, beam_size=example.width)
        self.set_source(example.source, example.reference or "")

    # ---- views -----------------------------------------------------------------------------

    def _show(self) -> None:
        for widget in (*self.cells.values(), *self.strips.values()):
            widget.setVisible(bool(self.outputs))
        if not self.outputs:
            self.chart_view.show_message(NO_MODEL if self.workspace is None else "Decoding…")
            return
        self.chart_view.show_view()
        by_strategy = {o.strategy: o for o in self.outputs}
        best = max((o.hypothesis.score for o in self.outputs), default=None)
        for key, cell in self.cells.items():
            output = by_strategy.get(key)
            self.strips[key].set_tokens(output.hypothesis.tokens if output is not None else [])
            if output is None:
                cell.setText(f"<b>{STRATEGY_TITLES[key]}</b>")
                continue
            hyp = output.hypothesis
            text = highlight_matches(output.bleu_tokens, output.matched) or "<i>(empty)</i>"
            lines = [f"<b>{STRATEGY_TITLES[key]}</b>", f"<span style='font-size:11pt'>{text}</span>",
                     f"log p = {log_p(hyp.score)}" + (" <b>(most probable)</b>"
                                                   if best is not None and hyp.score >= best - 1e-6
                                                   else ""),
                     f"length-normalised = {hyp.normalized_score:.3f}"
                     + ("" if hyp.finished else " (no &lt;eos&gt;: hit max length)")]
            if output.bleu is not None:
                b = output.bleu
                precisions = " / ".join(f"{p:.0f}" for p in b.precisions)
                lines.append(f"BLEU = <b>{b.score:.1f}</b>")
                lines.append(f"p1..p4 = {precisions}, BP = {b.bp:.2f}")
            cell.setText("<br>".join(lines))
        labels = [STRATEGY_TITLES[o.strategy] for o in self.outputs]
        scores = np.array([o.hypothesis.score for o in self.outputs])
        # Bars grow down from 0 for log p; the chart shows -log p so longer = less probable.
        self.score_chart.set_data(labels, -scores)
        bleu = [o.bleu.score if o.bleu is not None else 0.0 for o in self.outputs]
        self.bleu_chart.set_data(labels, np.array(bleu), value_max=100.0)
        # without a reference no BLEU: its column leaves (a hidden layout item keeps its room)
        plot, layout = self.bleu_chart.plot, self.chart_widget.ci
        if self.has_bleu() and plot not in layout.items:
            layout.addItem(plot, row=0, col=1)
        elif not self.has_bleu() and plot in layout.items:
            layout.removeItem(plot)
        self._fit_cards()

    def has_bleu(self) -> bool:
        return any(o.bleu is not None for o in self.outputs)

    def _explain_token(self, strategy: str, index: int) -> None:
        """Token `index` of `strategy`'s output clicked: explained through the Prober."""
        output = next((o for o in self.outputs if o.strategy == strategy), None)
        if output is None or self.outputs_input is None:
            return
        message = self.explain_token(self.outputs_input[0], output.hypothesis.token_ids[:index + 1],
                                     f"the compare panel ({STRATEGY_TITLES[strategy].lower()})")
        self.status.setText(message or "")

    def _fit_cards(self) -> None:
        """Every card (and token row) as tall as its wrapped text at its current width: a
        word-wrapped label inside a grid is otherwise squeezed and its last lines cut off."""
        for widgets in (self.cells, self.strips):
            needed = max(widget.heightForWidth(widget.width()) for widget in widgets.values())
            if needed < 0:  # not laid out yet
                continue
            for widget in widgets.values():
                widget.setMinimumHeight(needed)
        # the grid keeps the minimum it measured before these heights were set, and the panel's
        # minimum with it: the dock's saved size differed after presentation mode re-measured it
        self.card_grid.invalidate()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_cards()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presentation mode: fit the new text size
            self._fit_cards()

    # ---- content and export ----------------------------------------------------------------

    def has_content(self) -> bool:
        return bool(self.outputs)

    def plot_items(self) -> dict[str, object]:
        return {"scores": self.chart_widget.ci} if self.outputs else {}  # no empty axes

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return compare_tables(self.outputs)
