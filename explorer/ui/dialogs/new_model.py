"""The new-model dialog: every family in explorer.families, every cell and attention score in
`seqmodels/`, size presets, and the parameter count of the model before it is built for real. Which
fields it shows follows the family's config: a field the config has is a row the dialog shows."""

from __future__ import annotations

from dataclasses import fields
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

from explorer.families import families, get_family
from explorer.ui.dialogs.hf_config import HFConfigPicker
from seqmodels.config import CELLS, POSITIONAL
from seqmodels.families import preset_names
from seqmodels.scores import SCORES

# One line each, after the course notes (families and scores carry their own: explorer.families,
# seqmodels.scores).
FAMILY_TIPS = {name: family.summary for name, family in families().items()}
ATTENTION_TIPS = {name: score.tip for name, score in SCORES.items()}
CELL_TIPS = {
    "rnn": "Vanilla RNN: h_t = tanh(A h_{t-1} + B x_t); gradients vanish or explode over time",
    "ugrnn": "Update-gate RNN: one gate u mixes old state and candidate; u≈1 keeps state long",
    "gru": "GRU: reset and update gates; the most learnable gated RNN for shallow nets",
    "lstm": "LSTM: input, forget and output gates around an additive cell state c_t",
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

Family = Enum("Family", {name.replace("-", "_"): name for name in families()})
Cell = Enum("Cell", {name: name for name in CELLS})
Attention = Enum("Attention", {name.replace("-", "_"): name for name in SCORES})
for _enum in (Family, Cell, Attention):
    _enum.__str__ = lambda self: self.value  # QEnumComboBox shows str(member)


def _settings(family: str) -> set[str]:
    """The config fields of `family`'s models."""
    return {f.name for f in fields(get_family(family).model.config_class)}


def _value(widget):
    if isinstance(widget, QEnumComboBox):
        return widget.currentEnum().value
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    return widget.value()


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
        self.preset.addItems([*preset_names(), "custom"])
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
        self.hf_config = HFConfigPicker()  # HF architectures: start from a config.json
        self.hf_config.chosen.connect(self._apply_hf_file)
        self.hf_config.failed.connect(self._show_problem)
        # the config field each widget sets: a row shows when the family's config has its field
        self.setting_widgets = {
            "cell": self.cell, "attention": self.attention, "positional": self.positional,
            "embed_dim": self.embed_dim, "hidden_size": self.hidden_size, "d_model": self.d_model,
            "num_heads": self.num_heads, "d_ff": self.d_ff, "max_len": self.max_len,
            "bidirectional_encoder": self.bidirectional, "tie_weights": self.tie_weights,
            "hf_config": self.hf_config,
        }

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
        self.form.addRow("HF config.json", self.hf_config)
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
        from seqmodels.config import make_config

        config = make_config(self.family_name())
        if hasattr(config, "cell"):
            self.cell.setCurrentEnum(Cell[config.cell])
        if hasattr(config, "attention"):
            self.attention.setCurrentEnum(Attention[config.attention.replace("-", "_")])
        self.hf_config.clear()  # a config file describes one architecture
        self._apply_preset()

    def _apply_hf_file(self, family: str, values: dict, name: str) -> None:
        """A Hugging Face config.json: its family, its sizes in the fields, its settings kept."""
        self.set_family(family)
        self.hf_config.set_value(values["hf_config"], name)
        self.num_layers.setMaximum(max(8, values.get("num_layers", 1)))  # GPT-2 small has 12
        self._applying = True
        try:
            for name in ("d_model", "num_heads", "d_ff", "max_len", "num_layers", "dropout"):
                if name in values:
                    getattr(self, name).setValue(values[name])
        finally:
            self._applying = False
        self._size_edited()

    def _show_problem(self, message: str) -> None:
        self.params.setText(f"<span style='color:#c0392b'>{message}</span>")

    def _apply_preset(self) -> None:
        """Fill the size fields from the preset's (and the config's) values for this family."""
        from seqmodels.config import make_config

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
        settings = _settings(family)
        for name, widget in self.setting_widgets.items():
            form = self.form if self.form.indexOf(widget) >= 0 else self.advanced_form
            form.setRowVisible(widget, name in settings)
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
        from seqmodels.config import make_config

        family = self.family_name()
        settings = _settings(family)
        values = dict(num_layers=self.num_layers.value(), dropout=self.dropout.value(),
                      vocab_size=self.vocab_size)
        values.update((name, _value(widget)) for name, widget in self.setting_widgets.items()
                      if name in settings)
        if get_family(family).has_source:
            values["src_vocab_size"] = self.src_vocab_size
        if values.get("tie_weights") and "embed_dim" in values:  # an RNN LM ties equal sizes only
            values["tie_weights"] = values["embed_dim"] == values["hidden_size"]
        return make_config(family, **values)

    def update_count(self) -> int | None:
        """Build the model once to count its parameters; a bad combination says why instead."""
        import seqmodels

        try:
            count = seqmodels.count_parameters(seqmodels.build_model(self.model_config()))
        except (ValueError, TypeError) as exc:
            self.params.setText(f"<span style='color:#c0392b'>{exc}</span>")
            self.ok_button.setEnabled(False)
            return None
        vocab = f"vocabulary {self.vocab_size}"
        if get_family(self.family_name()).has_source:
            vocab = f"source vocabulary {self.src_vocab_size}, target {self.vocab_size}"
        self.params.setText(f"<b>{count:,}</b> trainable parameters ({vocab})")
        self.ok_button.setEnabled(True)
        self.parameter_count = count
        return count
