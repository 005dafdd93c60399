"""File ▸ Open model code…: the user names a Python file whose function builds their model.

The dialog says plainly that the file will be imported (run), and only this file: the app never
imports code it finds in a folder. The weights and the tokenizer are optional (a build() may load
or return them itself). Once opened, ModelReportDialog shows what `explorer check` says about the
model (explorer/usermodel/check.py) before the window switches to it.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout,
                               QLabel, QLineEdit, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget)

WARNING = ("The app will <b>import and run</b> this Python file, and only this file, to build "
           "your model. Open only code you trust. Weights are read as safetensors or with "
           "torch.load(weights_only=True), which runs no code.")


class ModelCodeDialog(QDialog):
    def __init__(self, parent=None, folder: str = "") -> None:
        super().__init__(parent)
        self.setObjectName("model_code_dialog")
        self.setWindowTitle("Open model code")
        self._folder = folder or str(Path.home())
        self.file = self._path_row("Python file that builds the model (FILE.py)",
                                   "Python files (*.py)")
        self.function = QLineEdit("build")
        self.function.setToolTip("The function in the file: build() returns (model, tokenizer) or "
                                 "(model, tokenizer, explorer.Adapter(...))")
        self.weights = self._path_row("Optional: the state dict (.safetensors, .pt, .pth, .bin)",
                                      "Weights (*.safetensors *.pt *.pth *.bin);;All files (*)")
        self.tokenizer = self._path_row("Optional: a tokenizer.json or a vocabulary .txt instead "
                                        "of build()'s tokenizer",
                                        "Tokenizers (*.json *.txt);;All files (*)")
        form = QFormLayout()
        form.addRow("Model &file:", self.file.parentWidget())
        form.addRow("&Function:", self.function)
        form.addRow("&Weights:", self.weights.parentWidget())
        form.addRow("&Tokenizer:", self.tokenizer.parentWidget())
        warning = QLabel(WARNING)
        warning.setObjectName("model_code_warning")
        warning.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.file.textChanged.connect(self._update)
        self.function.textChanged.connect(self._update)
        layout = QVBoxLayout(self)
        layout.addWidget(warning)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self._update()

    def _path_row(self, tip: str, filters: str) -> QLineEdit:
        row = QWidget(self)
        edit = QLineEdit(row)
        edit.setToolTip(tip)
        browse = QPushButton("Browse…", row)
        browse.setToolTip(tip)
        browse.clicked.connect(lambda: self._browse(edit, filters))
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(edit)
        layout.addWidget(browse)
        return edit

    def _browse(self, edit: QLineEdit, filters: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a file", self._folder, filters)
        if path:
            edit.setText(path)

    def _update(self) -> None:
        ready = self.file.text().strip().endswith(".py") and self.function.text().strip().isidentifier()
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(ready)

    def spec(self) -> tuple[str, str | None, str | None]:
        """(FILE.py:function, weights or None, tokenizer or None)."""
        build = f"{self.file.text().strip()}:{self.function.text().strip()}"
        return (build, self.weights.text().strip() or None, self.tokenizer.text().strip() or None)


class ModelReportDialog(QDialog):
    """The check's report, read-only, with Open (switch the window to the model) and Cancel (keep
    the model the window has)."""

    def __init__(self, lines: list[str], exit_code: int, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("model_report_dialog")
        self.setWindowTitle("What the explorer sees in your model")
        self.resize(900, 640)
        summary = QLabel("Every panel and command this model can show will show it." if exit_code == 0
                         else "Some panels will be empty or some commands will fail: the lines "
                         "marked <b>fix</b> say why and how to fix it.")
        summary.setObjectName("model_report_summary")
        summary.setWordWrap(True)
        self.text = QPlainTextEdit("\n".join(lines))
        self.text.setObjectName("model_report_text")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(summary)
        layout.addWidget(self.text)
        layout.addWidget(self.buttons)
