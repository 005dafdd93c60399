"""Step-through decoding: Step, Back, Play and Reset through greedy, beam or sampled decoding.

At every step the panel shows the output so far, the top-k next-token probabilities, the attention
row over the source (any layer and head), the live beam, and for sampling the truncated,
renormalised distribution the last token was drawn from. A masked language model does not decode
left to right: for it the panel shows fill-mask instead (explorer/ui/panels/fill_view.py). The StepDecoder lives on the GUI thread:
one step is one incremental model call on a small model (milliseconds), and keeping it here means
its tensors never cross threads. While training runs it decodes a frozen copy of the weights taken
at Reset (explorer/readers.py), never the weights the trainer is changing.
"""

from __future__ import annotations

import html
import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.analysis.beam_text import log_p
from explorer.errors import first_line
from explorer.ui.empty_state import EmptyState
from explorer.ui.panels.base import Panel
from explorer.ui.panels.decode_form import DecodeSettingsForm
from explorer.ui.panels.fill_view import FillMaskView
from explorer.ui.panels.decoding_widgets import (
    HIGHLIGHT_COLOR,
    AttentionPicker,
    BarChart,
    show_text,
    spin_box,
)

STRATEGY_LABELS = {"greedy": "Greedy", "beam": "Beam search", "sample": "Sampling"}
STRATEGY_FIELDS = {  # the decode settings each strategy reads
    "greedy": ("max_len",),
    "beam": ("beam_size", "alpha", "max_len"),
    "sample": ("temperature", "top_k", "top_p", "seed", "max_len"),
}
SHOW_TOP = 10
NO_MODEL = "Open or create a model: step through its decoding of the source here (→ = Step)."
FORCED_COLOR = "#d62728"
SAMPLE_BARS = 20


class StepDecodingPanel(Panel):
    PANEL_ID = "step"
    TITLE = "Step-through decoding"
    TOOLTIP = ("Decode one token at a time: Right = step, Left = back, Space = play, Home = reset, "
               "F = force the chosen token (what if)")

    stepped = Signal(int)  # steps taken after a step, back or reset

    def __init__(self, bus, parent: QWidget | None = None) -> None:
        super().__init__(bus, parent)
        self.decoder = None
        self.error = ""
        self.force_error = ""  # one line: why the last what-if token (or explain) was refused
        self.masked = False  # a masked LM: the fill-mask view replaces decoding
        self.setFocusPolicy(Qt.StrongFocus)
        self._build_controls()
        self._build_views()
        self._strategy_changed(reset=False)
        self.decode_page = QWidget()
        page = QVBoxLayout(self.decode_page)
        page.setContentsMargins(0, 0, 0, 0)
        page.addLayout(self.source_row)
        page.addLayout(self.option_row)
        page.addLayout(self.button_row)
        page.addWidget(self.output_label)
        page.addWidget(self.attention_note)
        page.addWidget(self.sample_caption)
        page.addWidget(self.views, 1)
        self.fill_view = FillMaskView(bus.state)
        self.fill_view.hide()
        root = QVBoxLayout(self)
        root.addWidget(self.decode_page, 1)
        root.addWidget(self.fill_view, 1)
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._play_tick)
        bus.workspace_changed.connect(self.set_workspace)
        if bus.workspace is not None:
            self.set_workspace(bus.workspace)
        bus.probe_input_changed.connect(self._follow_probe)

    def _build_controls(self) -> None:
        self.source_box = QLineEdit()
        self.source_box.setPlaceholderText("Source sentence (or prompt for a language model)")
        self.source_box.editingFinished.connect(self.reset)
        self.strategy_box = QComboBox()
        for key, label in STRATEGY_LABELS.items():
            self.strategy_box.addItem(label, key)
        self.strategy_box.currentIndexChanged.connect(lambda _: self._strategy_changed())
        self.form = DecodeSettingsForm(("beam_size", "alpha", "temperature", "top_k", "top_p",
                                        "seed", "max_len"))
        self.form.changed.connect(self.reset)
        self.source_row = QHBoxLayout()
        self.source_row.addWidget(QLabel("Source"))
        self.source_row.addWidget(self.source_box, 1)
        self.source_row.addWidget(self.strategy_box)
        self.option_row = QHBoxLayout()
        self.option_row.addWidget(self.form)
        self.option_row.addStretch(1)

        self.reset_button = self._button("Reset", "Back to the start (Home)", self.reset)
        self.back_button = self._button("◀ Back", "Undo one step (Left arrow)", self.back)
        self.step_button = self._button("Step ▶", "Generate one token (Right arrow)", self.step)
        self.play_button = self._button("Play", "Step automatically at the chosen speed (Space)",
                                        self.toggle_play)
        self.speed_box = spin_box(QDoubleSpinBox, (0.5, 30.0), 3.0, "Steps per second when playing")
        self.speed_box.valueChanged.connect(lambda _: self._set_interval())
        self.button_row = QHBoxLayout()
        for widget in (self.reset_button, self.back_button, self.step_button, self.play_button):
            self.button_row.addWidget(widget)
        self.button_row.addWidget(QLabel("Speed (steps/s)"))
        self.button_row.addWidget(self.speed_box)
        # what if: any of the top-k tokens, or a typed one, instead of the model's choice
        self.force_box = QComboBox()
        self.force_box.setEditable(True)
        self.force_box.setMinimumWidth(110)
        self.force_box.setToolTip("What if: a token to put at this step instead of the model's "
                                  "choice (pick one of the most probable, or type one)")
        self.force_button = self._button("Force ▶", "Put the chosen token at this step and go on "
                                         "decoding from it (F)", self.force)
        self.button_row.addWidget(self.force_box)
        self.button_row.addWidget(self.force_button)
        self.button_row.addStretch(1)
        # beside the source, whose box stretches: the button row sets the panel's least width
        self.explain_button = self._button("Why? ▶", "Explain the last output token in the "
                                           "attribution view (E)", self.explain_last)
        self.source_row.addWidget(self.explain_button)

    def _button(self, text, tip, slot) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.setFocusPolicy(Qt.NoFocus)  # keep the keyboard on the panel for the shortcuts
        button.clicked.connect(slot)
        return button

    def _build_views(self) -> None:
        self.output_label = QLabel()
        self.output_label.setTextFormat(Qt.RichText)
        self.output_label.setWordWrap(True)
        self.attention_note = QLabel()
        self.attention_note.hide()
        self.plots = pg.GraphicsLayoutWidget()
        # Side by side: the charts are as tall as the dock allows, one readable row per token.
        self.topk_chart = BarChart(self.plots.addPlot(row=0, col=0), "p(next token)")
        self.topk_chart.set_title("most probable next tokens")
        self.attention_chart = BarChart(self.plots.addPlot(row=0, col=1), "attention weight")
        self.attention_chart.set_title("attention over the source")
        self.sample_chart = BarChart(self.plots.addPlot(row=0, col=2), "renormalised p")
        self.sample_chart.set_title("last token drawn from")
        self.picker = AttentionPicker()
        self.picker.changed.connect(self._refresh)
        self.picker.hide()  # shown with an attention chart
        self.option_row.addWidget(self.picker)
        self.beam_table = QTableWidget(0, 3)
        self.beam_table.setHorizontalHeaderLabels(["live hypothesis", "log p", "length-normalised"])
        header = self.beam_table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        self.beam_table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.beam_table.setFocusPolicy(Qt.NoFocus)
        self.beam_table.hide()  # shown for beam search, once there is a decoder
        self.sample_caption = QLabel()
        self.sample_caption.setWordWrap(True)
        # The charts above, the live beam below; the user drags the handle to share the height.
        self.views = QSplitter(Qt.Vertical)
        self.charts_view = EmptyState(self.plots, NO_MODEL)  # no empty axes without a decoder
        self.views.addWidget(self.charts_view)
        self.views.addWidget(self.beam_table)
        self.views.setStretchFactor(0, 3)
        self.views.setStretchFactor(1, 1)
        self.views.setChildrenCollapsible(False)

    # ---- decoder ---------------------------------------------------------------------------

    @property
    def strategy(self) -> str:
        return self.strategy_box.currentData()

    def _strategy_changed(self, reset: bool = True) -> None:
        self.form.show_only(STRATEGY_FIELDS[self.strategy])
        self._show_sample_chart(self.strategy == "sample")
        if reset:
            self.reset()

    def _show_sample_chart(self, shown: bool) -> None:
        """The third chart column only for sampling."""
        self._show_chart(self.sample_chart, 2, shown)
        self.sample_caption.setVisible(shown)

    def _show_chart(self, chart: BarChart, column: int, shown: bool) -> None:
        """A chart's column in or out of the layout (a hidden layout item would keep its room)."""
        plot, layout = chart.plot, self.plots.ci
        if shown and plot not in layout.items:
            layout.addItem(plot, row=0, col=column)
        elif not shown and plot in layout.items:
            layout.removeItem(plot)

    def set_workspace(self, workspace) -> None:
        from explorer.families import family_of

        self.masked = workspace is not None and family_of(workspace.model).masked_lm
        self.decode_page.setVisible(not self.masked)
        self.fill_view.setVisible(self.masked)
        if self.masked:
            self.pause()
            self.decoder = None
            self.fill_view.fill()
            return
        data = getattr(workspace, "data", None) if workspace is not None else None
        if data is not None and data.val and not self.source_box.text():
            show_text(self.source_box, data.val[0][0])
        self.reset()

    def set_source(self, text: str) -> None:
        if self.masked:
            self.fill_view.set_text(text)
            return
        show_text(self.source_box, text)
        self.reset()

    def _follow_probe(self, source: str, _target: str) -> None:
        """A new probe (an Examples row, the probe box) is stepped through here too."""
        if source and source != self.source_box.text() and not self.masked:
            self.set_source(source)

    def reset(self) -> None:
        """A fresh decoder for the current source and options (the sampler re-seeded)."""
        self.pause()
        self.decoder = None
        self.force_error = ""
        if self.workspace is not None:
            from explorer.decoding import StepDecoder

            s = self.form.settings()
            try:
                self.decoder = StepDecoder(
                    self._decoded_model(), self.source_box.text(), self.strategy, beam_size=s.beam_size,
                    alpha=s.alpha, max_len=s.max_len, temperature=s.temperature, top_k=s.top_k,
                    top_p=s.top_p, seed=s.seed, show_top=SHOW_TOP,
                )
                self.error = ""
            except Exception as exc:  # a source the tokenizer cannot encode, an empty prompt...
                self.error = first_line(exc)
        self._refresh()

    def _decoded_model(self):
        """While training runs, a frozen copy of this moment's weights: a decode stepped through
        over seconds sees one set of weights, in eval mode, whatever the trainer does meanwhile."""
        if not self.bus.state.training.active:  # the trainer writes the weights meanwhile
            return self.workspace
        from explorer.readers import frozen_copy

        workspace = self.workspace
        return frozen_copy(workspace.model), workspace.tokenizer, workspace.src_tokenizer

    def step(self) -> bool:
        self.force_error = ""
        moved = self.decoder is not None and self.decoder.step()
        self._refresh()
        return moved

    def force(self) -> bool:
        """Force the token in the force box (a top-k entry's id, or the typed text) at this step."""
        if self.decoder is None:
            return False
        from explorer.errors import UserError

        text = self.force_box.currentText()
        index = self.force_box.findText(text)
        token = self.force_box.itemData(index) if index >= 0 else text
        try:
            self.decoder.force(token)
            self.force_error = ""
        except UserError as exc:
            self.force_error = str(exc)
        self._refresh()
        return not self.force_error

    def explain_last(self) -> None:
        """The attribution view explains the output's last token (through the Prober)."""
        ids = list(self.decoder.output.token_ids) if self.decoder is not None else []
        self.force_error = self.explain_token(self.source_box.text(), ids, "step-through decoding") or ""
        if self.decoder is not None:
            self._show_output()

    def back(self) -> bool:
        moved = self.decoder is not None and self.decoder.back()
        self._refresh()
        return moved

    def toggle_play(self) -> None:
        if self.timer.isActive():
            self.pause()
        elif self.decoder is not None and not self.decoder.done:
            self._set_interval()
            self.timer.start()
            self.play_button.setText("Pause")

    def pause(self) -> None:
        self.timer.stop()
        self.play_button.setText("Play")

    def _set_interval(self) -> None:
        self.timer.setInterval(round(1000 / self.speed_box.value()))

    def _play_tick(self) -> None:
        if not self.step() or self.decoder.done:
            self.pause()

    def keyPressEvent(self, event) -> None:
        actions = {Qt.Key_Right: self.step, Qt.Key_Left: self.back, Qt.Key_Space: self.toggle_play,
                   Qt.Key_Home: self.reset, Qt.Key_F: self.force, Qt.Key_E: self.explain_last}
        action = None if self.masked else actions.get(event.key())
        if action is None:
            super().keyPressEvent(event)
            return
        action()
        event.accept()

    # ---- views -----------------------------------------------------------------------------

    def _refresh(self) -> None:
        decoder = self.decoder
        self.back_button.setEnabled(bool(decoder and decoder.steps_taken))
        self.step_button.setEnabled(bool(decoder and not decoder.done))
        self.play_button.setEnabled(bool(decoder and not decoder.done))
        can_force = bool(decoder and not decoder.done and self.strategy != "beam")
        self.force_button.setEnabled(can_force)
        self.force_box.setEnabled(can_force)
        if decoder is None:
            self.output_label.setText("")
            self.charts_view.show_message(f"Cannot decode this source: {self.error}" if self.error
                                          else NO_MODEL)
            for chart in (self.topk_chart, self.attention_chart, self.sample_chart):
                chart.clear()
            self.beam_table.setRowCount(0)
            self.beam_table.hide()
            return
        self.charts_view.show_view()
        self._show_output()
        self.topk_chart.set_title("next tokens after the best hypothesis" if self.strategy == "beam"
                                  else "most probable next tokens")
        topk = decoder.topk
        self.force_box.clear()
        if topk is not None:
            for token_id, token in zip(topk.token_ids, topk.tokens):
                self.force_box.addItem(token, token_id)
            self.force_box.setCurrentIndex(min(1, len(topk.tokens) - 1))  # the runner-up
        if topk is None:
            self.topk_chart.clear()
        else:
            self.topk_chart.set_data(topk.tokens, topk.probs, highlight=0 if self.strategy != "sample"
                                     else None, value_max=1.0)
        attention = decoder.attention
        translates = self.workspace.is_seq2seq  # a language model has no source to attend to
        self.picker.setVisible(translates and attention is not None)
        # no empty chart where there is no attention: one line under the output says why
        self._show_chart(self.attention_chart, 1, attention is not None)
        self.attention_note.setVisible(attention is None)
        self.attention_note.setText(
            "" if attention is not None else "No attention chart: this model has no attention "
            "over the source." if translates else
            "No attention chart: a language model has no source to attend to; it reads its prompt.")
        if attention is None:
            self.attention_chart.clear()
        else:
            self.picker.set_shape(*attention.shape[:2])
            self.attention_chart.set_data(decoder.source_tokens[: attention.shape[-1]],
                                          self.picker.row(attention), value_max=1.0)
        last = decoder.last_distribution
        if last is None:
            self.sample_chart.clear()
        else:
            shown = last.token_ids[:SAMPLE_BARS]  # the support is sorted, most probable first
            chosen = np.flatnonzero(shown == last.chosen)
            self.sample_chart.set_data(self.workspace.tokenizer.tokens([int(i) for i in shown]),
                                       last.probs[:SAMPLE_BARS],
                                       highlight=int(chosen[0]) if len(chosen) else None,
                                       value_max=1.0)
            self.sample_chart.set_title(f"last token drawn from {len(last.token_ids)} left")
            self.sample_caption.setText(
                f"Sampling keeps {len(last.token_ids)} tokens after temperature, top-k and top-p, "
                f"renormalises them to sum to 1 and draws one (orange; seed "
                f"{self.form.settings().seed} replays it)." + (
                    f" The {len(shown)} most probable are shown; scroll for the rest."
                    if len(shown) < len(last.token_ids) else ""))
        self._show_beam()
        self.stepped.emit(decoder.steps_taken)

    def _show_output(self) -> None:
        decoder = self.decoder
        output = decoder.output
        words = [html.escape(t) for t in output.tokens]
        if words and not decoder.done:
            words[-1] = f'<b style="color:{HIGHLIGHT_COLOR}">{words[-1]}</b>'
        for position in decoder.forced if self.strategy != "beam" else ():
            if position < len(words):  # a forced token: underlined, in red, flagged
                words[position] = (f'<u style="color:{FORCED_COLOR}" title="forced">'
                                   f'{words[position]}⚑</u>')
        state = "done" if decoder.done else f"step {decoder.steps_taken}"
        text = (f"<b>Output so far</b> ({state}, log p = {log_p(output.score)}): "
                + (" ".join(words) if words else "<i>nothing yet: press Step (→)</i>"))
        if decoder.forced and self.strategy != "beam":
            own = decoder.own_output
            text += (f"<br><span style='color:{FORCED_COLOR}'>⚑ forced</span>: this hypothesis "
                     f"has log p = {log_p(output.score)}; the model's own greedy output "
                     f"“{html.escape(own.text)}” has log p = {log_p(own.score)}")
        if self.force_error:
            text += f"<br><i>{html.escape(self.force_error)}</i>"
        self.output_label.setText(text)

    def _show_beam(self) -> None:
        live = self.decoder.beam if self.strategy == "beam" else []
        self.beam_table.setVisible(self.strategy == "beam")
        self.beam_table.setRowCount(len(live))
        for row, hyp in enumerate(live):
            for col, value in enumerate((" ".join(hyp.tokens), f"{hyp.score:.3f}",
                                         f"{hyp.normalized_score:.3f}")):
                self.beam_table.setItem(row, col, QTableWidgetItem(value))

    # ---- content and export ----------------------------------------------------------------

    def has_content(self) -> bool:
        return self.fill_view.has_content() if self.masked else self.decoder is not None

    def plot_items(self) -> dict[str, object]:
        if self.masked:
            return {"fill": self.fill_view.plots.ci}
        return {} if self.charts_view.empty else {"step": self.plots.ci}  # no empty axes

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.masked:
            return self.fill_view.tables()
        if self.decoder is None:
            return {}
        decoder, tables = self.decoder, {}
        output = decoder.output
        tables["output"] = (["position", "token", "logprob"],
                            [[i, t, p] for i, (t, p) in enumerate(zip(output.tokens,
                                                                      output.token_logprobs))])
        chart_tables = (("next_tokens", self.topk_chart, "probability"),
                        ("attention", self.attention_chart, "weight"),
                        ("sample_distribution", self.sample_chart, "probability"))
        for name, chart, column in chart_tables:
            if len(chart.values):
                tables[name] = (["token", column], [[t, v] for t, v in zip(chart.labels, chart.values)])
        if self.strategy == "beam":
            tables["beam"] = (["tokens", "score", "normalized_score"],
                              [[" ".join(h.tokens), h.score, h.normalized_score] for h in decoder.beam])
        return tables

    def documents(self) -> dict[str, object]:
        """The decoding state and its tables as one JSON (a masked LM: `explorer fill --json`'s)."""
        if self.masked:
            result = self.fill_view.result
            return {"fill": result.to_dict()} if result is not None else {}
        if self.decoder is None:
            return {}
        return {"state": {"source": self.source_box.text(), "strategy": self.strategy,
                          "steps": self.decoder.steps_taken,
                          "tables": {name: {"header": h, "rows": r}
                                     for name, (h, r) in self.tables().items()}}}

    def closeEvent(self, event) -> None:
        self.pause()
        super().closeEvent(event)
