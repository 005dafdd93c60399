"""The new-model dialog's "HF config.json" row: a Hugging Face architecture from a config file.

Choosing a file (gpt2, bert, marian or t5) picks its family in the dialog and fills the size
fields from it; its other settings (activation, norms, ...) travel in the config's `hf_config`
(explorer/hf/architectures.py). The data's tokenizer still sets the vocabulary.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget

from explorer.hf.architectures import HF_CONFIG_EDITOR
from explorer.ui.jobs import one_line
from seqmodels.settings import register_editor


class HFConfigPicker(QWidget):
    chosen = Signal(str, dict, str)  # family, config fields (sizes and hf_config), file name
    failed = Signal(str)  # one line: why the file is no architecture the explorer builds

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("hf_config_picker")
        self._text = ""
        self.path = QLineEdit()
        self.path.setReadOnly(True)
        self.path.setPlaceholderText("transformers' defaults")
        self.path.setToolTip("A Hugging Face config.json the architecture starts from; the size "
                             "fields override it, the data sets the vocabulary")
        browse = QPushButton("Choose…")
        browse.setToolTip("Pick a config.json (model_type gpt2, bert, marian or t5)")
        browse.clicked.connect(self._browse)
        clear = QPushButton("Clear")
        clear.setToolTip("Back to transformers' defaults for this architecture")
        clear.clicked.connect(self.clear)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.path, 1)
        layout.addWidget(browse)
        layout.addWidget(clear)

    def value(self) -> str:
        """The chosen file's settings as JSON text ("" when none): the config's hf_config."""
        return self._text

    def set_value(self, text: str, name: str = "") -> None:
        self._text = text
        self.path.setText(name)

    def clear(self) -> None:
        self.set_value("")

    def load(self, path: str | Path) -> bool:
        """Read a config.json: `chosen` with its family, fields and name, or `failed` with why."""
        from explorer.hf.architectures import architecture_from_file

        try:
            family, fields = architecture_from_file(Path(path))
        except Exception as exc:  # noqa: BLE001 - any unreadable file is one line in the dialog
            self.failed.emit(one_line(exc))
            return False
        self.chosen.emit(family, fields, Path(path).name)  # the dialog sets the value
        return True

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "A Hugging Face config.json", "",
                                              "Config (*.json);;All files (*)")
        if path:
            self.load(path)


register_editor(HF_CONFIG_EDITOR, HFConfigPicker)  # the architectures' hf_config field's row
