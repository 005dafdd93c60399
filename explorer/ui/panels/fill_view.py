"""Fill-mask, the step-through panel's view for masked language models (our bert, Hugging Face
BERT and DistilBERT): for each mask in the text, the top-k tokens with their probabilities, and
for the chosen mask the attention row of that position (any layer and head) over the text.

It runs `explorer fill`'s core (explorer.decoding.fill.fill_mask) on the GUI thread: one forward
pass of a small model, like one step of the step-through decoder.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from explorer.errors import first_line
from explorer.ui.panels.decoding_widgets import HIGHLIGHT_COLOR, AttentionPicker, BarChart, show_text

DEFAULT_TEXT = "the [MASK] sat on the mat"
DEFAULT_TOP_K = 5


class FillMaskView(QWidget):
    def __init__(self, state, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state  # explorer.state.AppState: the workspace filled in
        self.result = None  # explorer.decoding.fill.FillResult
        self.error = ""
        self.text_box = QLineEdit(DEFAULT_TEXT)
        self.text_box.setToolTip("Write [MASK] (or <mask>) where a token is missing; Enter fills")
        self.text_box.editingFinished.connect(self.fill)
        self.top_k_box = QSpinBox()
        self.top_k_box.setRange(1, 50)
        self.top_k_box.setValue(DEFAULT_TOP_K)
        self.top_k_box.setToolTip("How many of the most probable tokens to list (explorer fill --top-k)")
        self.top_k_box.valueChanged.connect(lambda _: self.fill())
        self.mask_box = QComboBox()
        self.mask_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.mask_box.setToolTip("The masked position whose predictions and attention are shown")
        self.mask_box.currentIndexChanged.connect(lambda _: self.draw())
        self.picker = AttentionPicker()
        self.picker.layer_box.setToolTip("Layer whose self-attention row is shown")
        self.picker.changed.connect(self.draw)
        row = QHBoxLayout()
        row.addWidget(QLabel("Text"))
        row.addWidget(self.text_box, 1)
        row.addWidget(QLabel("top-k"))
        row.addWidget(self.top_k_box)
        options = QHBoxLayout()
        options.addWidget(QLabel("mask"))
        options.addWidget(self.mask_box)
        options.addWidget(self.picker)
        options.addStretch(1)
        self.text_label = QLabel()
        self.text_label.setTextFormat(Qt.RichText)
        self.text_label.setWordWrap(True)
        self.plots = pg.GraphicsLayoutWidget()
        self.topk_chart = BarChart(self.plots.addPlot(row=0, col=0), "p(token)")
        self.attention_chart = BarChart(self.plots.addPlot(row=0, col=1), "attention weight")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addLayout(options)
        layout.addWidget(self.text_label)
        layout.addWidget(self.plots, 1)

    def set_text(self, text: str) -> None:
        show_text(self.text_box, text)
        self.fill()

    def fill(self) -> None:
        """Run fill-mask on the text; a text without a mask (or too long) gets one line why."""
        from explorer.decoding.fill import fill_mask
        from explorer.errors import UserError

        self.result, self.error = None, ""
        if self.state.workspace is not None:
            try:
                self.result = fill_mask(self.state.workspace, self.text_box.text(), self.top_k_box.value())
            except (UserError, ValueError) as exc:
                self.error = first_line(exc)
        keep = self.mask_box.currentIndex()
        self.mask_box.blockSignals(True)
        self.mask_box.clear()
        for number, mask in enumerate(self.result.masks if self.result else ()):
            self.mask_box.addItem(f"{number + 1}: position {mask.position}", number)
        self.mask_box.setCurrentIndex(min(max(keep, 0), self.mask_box.count() - 1))
        self.mask_box.blockSignals(False)
        self.draw()

    def chosen(self):
        if self.result is None or self.mask_box.currentIndex() < 0:
            return None
        return self.result.masks[self.mask_box.currentIndex()]

    def draw(self) -> None:
        mask = self.chosen()
        if mask is None:
            self.text_label.setText(html.escape(self.error) if self.error else
                                    "No model yet: train one or open a checkpoint.")
            self.topk_chart.clear()
            self.attention_chart.clear()
            return
        tokens = [html.escape(t) for t in self.result.tokens]
        tokens[mask.position] = f'<b style="color:{HIGHLIGHT_COLOR}">{tokens[mask.position]}</b>'
        best = mask.predictions[0]
        self.text_label.setText(
            f"<b>Fill-mask</b> (a masked language model predicts the hidden token from both "
            f"sides): {' '.join(tokens)}<br>best at position {mask.position}: "
            f"<b>{html.escape(best.token)}</b> (p = {best.prob:.3f}) → {html.escape(best.sequence)}")
        self.topk_chart.set_title(f"top {len(mask.predictions)} at position {mask.position}")
        self.topk_chart.set_data([p.token for p in mask.predictions],
                                 np.array([p.prob for p in mask.predictions]), highlight=0,
                                 value_max=1.0)
        if mask.attention is None:
            self.attention_chart.clear()
            return
        self.picker.set_shape(*mask.attention.shape[:2])
        self.attention_chart.set_title(f"attention of position {mask.position}")
        self.attention_chart.set_data(self.result.tokens, self.picker.row(mask.attention),
                                      highlight=mask.position, value_max=1.0)

    def has_content(self) -> bool:
        return self.chosen() is not None

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        mask = self.chosen()
        if mask is None:
            return {}
        tables = {"fill": (["mask", "position", "rank", "token_id", "token", "prob"],
                           [[number + 1, m.position, rank + 1, p.token_id, p.token, p.prob]
                            for number, m in enumerate(self.result.masks)
                            for rank, p in enumerate(m.predictions)])}
        if len(self.attention_chart.values):
            tables["fill_attention"] = (["token", "weight"], [
                [t, v] for t, v in zip(self.attention_chart.labels, self.attention_chart.values)])
        return tables
