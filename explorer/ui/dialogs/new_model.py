"""The new-model dialog: every family in explorer.families, size presets, and the parameter count of
the model before it is built for real. Its rows are the family's config fields (seqmodels.settings:
each field's label, tip, range or choices), built again when the family changes, so a new family's
new field shows without a line here."""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)
from superqt import QCollapsible

from explorer.families import families, get_family
from explorer.ui.dialogs import hf_config  # noqa: F401 - registers its editor with seqmodels.settings
from seqmodels.families import preset_names
from seqmodels.settings import Setting, config_settings, editor_for

# One line each (families, fields and their choices carry their own: explorer.families,
# seqmodels.settings).
PRESET_TIPS = {
    "tiny": "Trains in seconds on a laptop CPU",
    "small": "Minutes on a CPU; clearer patterns",
}
SPIN_MAX = 2**31 - 1  # QSpinBox holds a C int

def _rows(family: str) -> dict[str, tuple[type, Setting]]:
    """The fields of `family`'s config the dialog shows: those with a setting the data does not
    size."""
    settings = config_settings(get_family(family).model.config_class)
    return {name: row for name, row in settings.items() if not row[1].sized_by_data}


def _value(widget):
    if isinstance(widget, QComboBox):
        return widget.currentText()
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QLineEdit):
        return widget.text()
    return widget.value()


def _set_value(widget, value) -> None:
    if isinstance(widget, QComboBox):
        widget.setCurrentText(value)
    elif isinstance(widget, QCheckBox):
        widget.setChecked(value)
    elif isinstance(widget, QLineEdit):
        widget.setText(value)
    else:
        widget.set_value(value) if hasattr(widget, "set_value") else widget.setValue(value)


def _set_tips(combo, tips: dict[str, str]) -> None:
    for i in range(combo.count()):
        combo.setItemData(i, tips.get(combo.itemText(i), ""), Qt.ItemDataRole.ToolTipRole)


def _editor(kind: type, spec: Setting) -> QWidget:
    """The widget for one field: its setting's own editor, or one for its type and range."""
    if editor_for(spec.editor) is not None:
        widget = editor_for(spec.editor)()
    elif kind is bool:
        widget = QCheckBox(spec.label)
    elif kind is int:
        widget = QSpinBox()
        widget.setRange(int(spec.low if spec.low is not None else -SPIN_MAX),
                        int(min(spec.high if spec.high is not None else SPIN_MAX, SPIN_MAX)))
    elif kind is float:
        widget = QDoubleSpinBox()
        low = spec.low if spec.low is not None else -1e9
        high = spec.high if spec.high is not None else 1e9
        step = (high - low) / 20 if spec.high is not None and spec.low is not None else 0.1
        widget.setDecimals(3)
        widget.setSingleStep(step)
        widget.setRange(low, high - step / 5 if spec.high_open else high)
    elif spec.choice_tips():
        widget = QComboBox()
        widget.addItems(list(spec.choice_tips()))
        _set_tips(widget, spec.choice_tips())
    else:
        widget = QLineEdit()
    widget.setToolTip(spec.tip)
    return widget


class NewModelDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, preset: str | None = None,
                 vocab_size: int = 64, src_vocab_size: int = 64) -> None:
        super().__init__(parent)
        self.setObjectName("new_model_dialog")
        self.setWindowTitle("New model")
        self.setMinimumWidth(460)
        self.vocab_size, self.src_vocab_size = vocab_size, src_vocab_size
        self.setting_widgets: dict[str, QWidget] = {}  # config field -> its row's widget
        self._rows_family: str | None = None

        self.family = QComboBox()  # the registry as it is now: families added later show too
        self.family.addItems(list(families()))
        _set_tips(self.family, {name: family.summary for name, family in families().items()})
        self.family.setToolTip("The architecture; hover the choices for a one-line summary")
        self.preset = QComboBox()
        self.preset.addItems([*preset_names(), "custom"])
        _set_tips(self.preset, PRESET_TIPS)
        self.preset.setToolTip("Size preset: fills the size fields below")

        self.form = QFormLayout()
        self.form.addRow("architecture", self.family)
        self.form.addRow("size preset", self.preset)
        advanced = QCollapsible("Advanced")
        advanced.setToolTip("Dropout, context length, weight tying and the like")
        advanced_body = QWidget()
        self.advanced_form = QFormLayout(advanced_body)
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

        self.family.currentTextChanged.connect(lambda *_: self._family_changed())
        self.preset.currentTextChanged.connect(lambda *_: self._apply_preset())
        self._applying = False
        self.preset.setCurrentText(preset or "tiny")
        self._family_changed()

    def family_name(self) -> str:
        return self.family.currentText()

    def set_family(self, name: str) -> None:
        get_family(name)  # a UserError for a name the registry does not know
        self.family.setCurrentText(name)

    def _family_changed(self) -> None:
        """A new family gets its config's rows, filled from its defaults and the preset."""
        self._build_rows()
        self._apply_preset(everything=True)

    def _build_rows(self) -> None:
        family = self.family_name()
        if family == self._rows_family:
            return
        for widget in self.setting_widgets.values():
            form = self.form if self.form.indexOf(widget) >= 0 else self.advanced_form
            row = form.takeRow(widget)
            label = row.labelItem.widget() if row.labelItem is not None else None
            for item in (label, widget):
                if item is not None:
                    item.hide()
                    item.deleteLater()  # later: it may be the sender of the signal that got us here
        self.setting_widgets = {}
        for name, (kind, spec) in _rows(family).items():
            widget = _editor(kind, spec)
            form = self.advanced_form if spec.advanced else self.form
            if isinstance(widget, QCheckBox):
                form.addRow(widget)
            else:
                form.addRow(spec.label, widget)
            self._watch(name, widget, kind)
            self.setting_widgets[name] = widget
        self._rows_family = family

    def _watch(self, name: str, widget: QWidget, kind: type) -> None:
        """Editing a number leaves the preset; any edit recounts the parameters."""
        if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
            widget.valueChanged.connect(self._size_edited)
        elif isinstance(widget, QComboBox):
            widget.currentTextChanged.connect(lambda *_: self.update_count())
        elif isinstance(widget, QCheckBox):
            widget.toggled.connect(lambda *_: self.update_count())
        elif isinstance(widget, QLineEdit):
            widget.editingFinished.connect(self.update_count)
        if hasattr(widget, "chosen"):  # an editor that reads a file of settings (HF config.json)
            widget.chosen.connect(partial(self._apply_file, name))
        if hasattr(widget, "failed"):
            widget.failed.connect(self._show_problem)

    def _apply_file(self, field: str, family: str, values: dict, file_name: str) -> None:
        """A file of settings (an HF config.json): its family, its values in the rows."""
        self.set_family(family)
        self._applying = True
        try:
            for name, value in values.items():
                widget = self.setting_widgets.get(name)
                if name == field:
                    widget.set_value(value, file_name)
                elif widget is not None:
                    _set_value(widget, value)
        finally:
            self._applying = False
        self._size_edited()

    def _show_problem(self, message: str) -> None:
        self.params.setText(f"<span style='color:#c0392b'>{message}</span>")

    def _apply_preset(self, everything: bool = False) -> None:
        """Fill the number and switch rows (and with `everything`, every row) from the preset's
        and the config's values for this family."""
        from seqmodels.config import make_config

        preset = self.preset.currentText()
        config = make_config(self.family_name(), None if preset == "custom" else preset)
        rows = _rows(self.family_name())
        self._applying = True
        try:
            for name, widget in self.setting_widgets.items():
                if everything or rows[name][0] in (int, float, bool):
                    _set_value(widget, getattr(config, name))
        finally:
            self._applying = False
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
        values = {name: _value(widget) for name, widget in self.setting_widgets.items()}
        values["vocab_size"] = self.vocab_size
        if get_family(family).has_source:
            values["src_vocab_size"] = self.src_vocab_size
        if values.get("tie_weights") and "embed_dim" in values:  # an RNN LM ties equal sizes only
            values["tie_weights"] = values["embed_dim"] == values["hidden_size"]
        return make_config(family, **values)

    def update_count(self) -> int | None:
        """Build the model once to count its parameters; a bad combination says why instead."""
        import seqmodels

        if self._applying:
            return None
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
