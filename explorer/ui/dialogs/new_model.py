"""The new-model dialog: every architecture, cell and attention score in `models/`, size presets,
and the parameter count of the model before it is built for real."""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from superqt import QCollapsible, QEnumComboBox, QLabeledSlider

from models.config import ATTENTION_SCORES, CELLS, FAMILIES, POSITIONAL, PRESETS

# One line each, after the course notes.
FAMILY_TIPS = {
    "rnn-lm": "Recurrent language model: h_t = f(h_{t-1}, x_t), predicts the next token",
    "seq2seq": "Encoder-decoder RNN: the encoder reads the source, the decoder writes the target",
    "transformer": "Encoder-decoder Transformer: self-attention replaces recurrence (Vaswani 2017)",
    "gpt": "Decoder-only Transformer with causal self-attention: next-token language model",
    "bert": "Encoder-only Transformer trained to fill in masked tokens (15%: 80/10/10)",
}
CELL_TIPS = {
    "rnn": "Vanilla RNN: h_t = tanh(A h_{t-1} + B x_t); gradients vanish or explode over time",
    "ugrnn": "Update-gate RNN: one gate u mixes old state and candidate; u≈1 keeps state long",
    "gru": "GRU: reset and update gates; the most learnable gated RNN for shallow nets",
    "lstm": "LSTM: input, forget and output gates around an additive cell state c_t",
}
ATTENTION_TIPS = {
    "none": "No attention: the decoder sees only the final encoder state (the bottleneck)",
    "dot": "Dot product: score(s_t, h_i) = s_tᵀ h_i (Luong 2015)",
    "general": "General: score(s_t, h_i) = s_tᵀ W_a h_i with a trained W_a (Luong 2015)",
    "scaled-dot": "Scaled dot product: score = s_tᵀ h_i / √n (Vaswani 2017)",
    "additive": "Additive: score = v_aᵀ tanh(W_a [s_t; h_i]) (Bahdanau 2015)",
    "cosine": "Content-based: score = cosine(s_t, h_i) (Graves 2014)",
    "location": "Location-based: α_t = softmax(W_a s_t), from the target position alone "
    "(Luong 2015)",
}
POSITIONAL_TIPS = {
    "sinusoidal": "Fixed sines and cosines of geometric wavelengths (Vaswani 2017)",
    "learned": "A trained embedding per position, up to max_len",
    "rope": "Rotary: rotates query/key pairs by position-dependent angles",
}
PRESET_TIPS = {
    "tiny": "Trains in seconds on a laptop CPU",
    "small": "Minutes on a CPU; clearer patterns",
}

Family = Enum("Family", {name.replace("-", "_"): name for name in FAMILIES})
Cell = Enum("Cell", {name: name for name in CELLS})
Attention = Enum("Attention", {name.replace("-", "_"): name for name in ATTENTION_SCORES})
for _enum in (Family, Cell, Attention):
    _enum.__str__ = lambda self: self.value  # QEnumComboBox shows str(member)

RNN_FAMILIES = ("rnn-lm", "seq2seq")


def _set_tips(combo, tips: dict[str, str]) -> None:
    for i in range(combo.count()):
        combo.setItemData(i, tips.get(combo.itemText(i), ""), Qt.ItemDataRole.ToolTipRole)


class NewModelDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, preset: str | None = None,
                 vocab_size: int = 64, src_vocab_size: int = 64) -> None:
        super().__init__(parent)
        self.setObjectName("new_model_dialog")
        self.setWindowTitle("New model")
        self.setMinimumWidth(460)
        self.vocab_size, self.src_vocab_size = vocab_size, src_vocab_size

        self.family = QEnumComboBox(enum_class=Family)
        _set_tips(self.family, FAMILY_TIPS)
        self.family.setToolTip("The architecture; hover the choices for a one-line summary")
        self.preset = QComboBox()
        self.preset.addItems([*PRESETS, "custom"])
        _set_tips(self.preset, PRESET_TIPS)
        self.preset.setToolTip("Size preset: fills the size fields below")
        self.cell = QEnumComboBox(enum_class=Cell)
        _set_tips(self.cell, CELL_TIPS)
        self.cell.setToolTip("The recurrent cell of RNN models")
        self.attention = QEnumComboBox(enum_class=Attention)
        _set_tips(self.attention, ATTENTION_TIPS)
        self.attention.setToolTip("How the decoder scores encoder states (seq2seq only)")
        self.positional = QComboBox()
        self.positional.addItems(POSITIONAL)
        _set_tips(self.positional, POSITIONAL_TIPS)
        self.positional.setToolTip("How Transformers see token order")

        def spin(low, high, tip):
            box = QSpinBox()
            box.setRange(low, high)
            box.setToolTip(tip)
            return box

        self.embed_dim = spin(2, 4096, "Size of the token embeddings")
        self.hidden_size = spin(2, 4096, "Size of the recurrent state h_t")
        self.d_model = spin(4, 4096, "Width of every Transformer layer (a multiple of the heads)")
        self.num_heads = spin(1, 64, "Attention heads; each sees d_model / heads dimensions")
        self.d_ff = spin(4, 16384, "Hidden size of each position-wise feed-forward block")
        self.max_len = spin(8, 8192, "Longest sequence the positions (and GPT context) cover")
        self.num_layers = QLabeledSlider(Qt.Orientation.Horizontal)
        self.num_layers.setRange(1, 8)
        self.num_layers.setToolTip("Stacked layers (per stack for encoder-decoder models)")
        self.dropout = QDoubleSpinBox()
        self.dropout.setRange(0.0, 0.9)
        self.dropout.setSingleStep(0.05)
        self.dropout.setToolTip("Probability of zeroing an activation while training")
        self.bidirectional = QCheckBox("bidirectional encoder")
        self.bidirectional.setToolTip("The encoder reads both ways: h_i = [→h_i; ←h_i]")
        self.tie_weights = QCheckBox("tie input and output embeddings")
        self.tie_weights.setToolTip("The output projection reuses the embedding matrix")

        self.form = QFormLayout()
        self.form.addRow("architecture", self.family)
        self.form.addRow("size preset", self.preset)
        self.form.addRow("cell", self.cell)
        self.form.addRow("attention", self.attention)
        self.form.addRow("positional", self.positional)
        self.form.addRow("embedding size", self.embed_dim)
        self.form.addRow("hidden size", self.hidden_size)
        self.form.addRow("d_model", self.d_model)
        self.form.addRow("heads", self.num_heads)
        self.form.addRow("feed-forward size", self.d_ff)
        self.form.addRow("layers", self.num_layers)
        advanced = QCollapsible("Advanced")
        advanced.setToolTip("Dropout, context length and weight tying")
        advanced_body = QWidget()
        self.advanced_form = advanced_form = QFormLayout(advanced_body)
        advanced_form.addRow("dropout", self.dropout)
        advanced_form.addRow("max length", self.max_len)
        advanced_form.addRow(self.bidirectional)
        advanced_form.addRow(self.tie_weights)
        advanced.addWidget(advanced_body)

        self.params = QLabel()
        self.params.setObjectName("parameter_count")
        self.params.setToolTip("Trainable parameters, tied weights counted once")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Build")
        self.ok_button.setToolTip("Build this model on the current data (or the copy task)")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addWidget(advanced)
        layout.addWidget(self.params)
        layout.addWidget(buttons)

        self.family.currentEnumChanged.connect(lambda *_: self._family_changed())
        self.preset.currentTextChanged.connect(lambda *_: self._apply_preset())
        for box in (self.embed_dim, self.hidden_size, self.d_model, self.num_heads, self.d_ff,
                    self.max_len, self.dropout):
            box.valueChanged.connect(self._size_edited)
        self.num_layers.valueChanged.connect(self._size_edited)
        for widget in (self.cell, self.attention):
            widget.currentEnumChanged.connect(lambda *_: self.update_count())
        self.positional.currentTextChanged.connect(lambda *_: self.update_count())
        for box in (self.bidirectional, self.tie_weights):
            box.toggled.connect(lambda *_: self.update_count())
        self._applying = False
        self.preset.setCurrentText(preset or "tiny")
        self._family_changed()

    def family_name(self) -> str:
        return self.family.currentEnum().value

    def set_family(self, name: str) -> None:
        self.family.setCurrentEnum(Family[name.replace("-", "_")])

    def _family_changed(self) -> None:
        """A new family starts from its config's default cell and attention score."""
        from models.config import make_config

        config = make_config(self.family_name())
        if hasattr(config, "cell"):
            self.cell.setCurrentEnum(Cell[config.cell])
        if hasattr(config, "attention"):
            self.attention.setCurrentEnum(Attention[config.attention.replace("-", "_")])
        self._apply_preset()

    def _apply_preset(self) -> None:
        """Fill the size fields from the preset's (and the config's) values for this family."""
        from models.config import make_config

        family = self.family_name()
        preset = self.preset.currentText()
        config = make_config(family, None if preset == "custom" else preset)
        self._applying = True
        try:
            for name in ("embed_dim", "hidden_size", "d_model", "num_heads", "d_ff", "max_len"):
                if hasattr(config, name):
                    getattr(self, name).setValue(getattr(config, name))
            self.num_layers.setValue(config.num_layers)
            self.dropout.setValue(config.dropout)
            self.bidirectional.setChecked(getattr(config, "bidirectional_encoder", False))
            self.tie_weights.setChecked(getattr(config, "tie_weights", False))
        finally:
            self._applying = False
        rnn = family in RNN_FAMILIES
        for widget, visible in (
            (self.cell, rnn), (self.attention, family == "seq2seq"), (self.positional, not rnn),
            (self.embed_dim, rnn), (self.hidden_size, rnn), (self.d_model, not rnn),
            (self.num_heads, not rnn), (self.d_ff, not rnn), (self.max_len, not rnn),
            (self.bidirectional, family == "seq2seq"), (self.tie_weights, family != "seq2seq"),
        ):
            form = self.form if self.form.indexOf(widget) >= 0 else self.advanced_form
            form.setRowVisible(widget, visible)
        self.update_count()

    def _size_edited(self, *_) -> None:
        if self._applying:
            return
        self.preset.blockSignals(True)
        self.preset.setCurrentText("custom")
        self.preset.blockSignals(False)
        self.update_count()

    def model_config(self):
        """The chosen config; its vocabulary sizes stand in until the data's tokenizers set them."""
        from models.config import make_config

        family = self.family_name()
        values = dict(num_layers=self.num_layers.value(), dropout=self.dropout.value(),
                      vocab_size=self.vocab_size)
        if family in RNN_FAMILIES:
            values.update(cell=self.cell.currentEnum().value, embed_dim=self.embed_dim.value(),
                          hidden_size=self.hidden_size.value())
            if family == "seq2seq":
                values.update(attention=self.attention.currentEnum().value,
                              bidirectional_encoder=self.bidirectional.isChecked(),
                              src_vocab_size=self.src_vocab_size)
            else:
                values.update(tie_weights=self.tie_weights.isChecked() and
                              self.embed_dim.value() == self.hidden_size.value())
        else:
            values.update(d_model=self.d_model.value(), num_heads=self.num_heads.value(),
                          d_ff=self.d_ff.value(), max_len=self.max_len.value(),
                          positional=self.positional.currentText(),
                          tie_weights=self.tie_weights.isChecked())
            if family == "transformer":
                values.update(src_vocab_size=self.src_vocab_size)
        return make_config(family, **values)

    def update_count(self) -> int | None:
        """Build the model once to count its parameters; a bad combination says why instead."""
        import models

        try:
            count = models.count_parameters(models.build_model(self.model_config()))
        except (ValueError, TypeError) as exc:
            self.params.setText(f"<span style='color:#c0392b'>{exc}</span>")
            self.ok_button.setEnabled(False)
            return None
        vocab = f"vocabulary {self.vocab_size}"
        if self.family_name() in ("seq2seq", "transformer"):
            vocab = f"source vocabulary {self.src_vocab_size}, target {self.vocab_size}"
        self.params.setText(f"<b>{count:,}</b> trainable parameters ({vocab})")
        self.ok_button.setEnabled(True)
        self.parameter_count = count
        return count
