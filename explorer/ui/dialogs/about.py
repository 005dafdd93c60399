"""Help ▸ About, Help ▸ Keyboard shortcuts, and Model ▸ Summary."""

from __future__ import annotations

import html

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer import __version__
from explorer.ui.actions import shortcut_rows


def show_about(parent: QWidget) -> None:
    QMessageBox.about(
        parent,
        "About Sequence Model Explorer",
        f"<h3>Sequence Model Explorer {__version__}</h3>"
        "<p>Train small sequence models (RNN, LSTM, GRU, UGRNN, seq2seq with attention, "
        "Transformer, GPT, BERT) and watch how they work: training curves, BLEU, attention, "
        "positional encodings, gradient flow, beam search and step-by-step decoding.</p>"
        "<p>Built with PyTorch, PySide6, pyqtgraph and superqt. MIT licence.</p>",
    )


class ShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("shortcuts_dialog")
        self.setWindowTitle("Keyboard shortcuts")
        rows = shortcut_rows()
        table = QTableWidget(len(rows), 2)
        table.setHorizontalHeaderLabels(["action", "keys"])
        table.verticalHeader().setVisible(False)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.horizontalHeader().setStretchLastSection(True)
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, (action, keys) in enumerate(rows):
            table.setItem(row, 0, QTableWidgetItem(action))
            table.setItem(row, 1, QTableWidgetItem(keys))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(table)
        layout.addWidget(buttons)
        self.resize(420, 480)


def model_summary(workspace) -> str:
    """Rich text: family, every config field, and the parameter count."""
    if workspace is None:
        return "No model yet: Model ▸ New model, or File ▸ Open a checkpoint."
    from seqmodels.config import config_to_dict, count_parameters

    config = config_to_dict(workspace.model.config)
    rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td><b>{html.escape(str(v))}</b></td></tr>"
        for k, v in config.items()
    )
    data = workspace.task or ("files" if workspace.data is not None else "none")
    return (
        f"<p><b>{workspace.family}</b> on <b>{html.escape(data)}</b>, step {workspace.step}</p>"
        f"<p><b>{count_parameters(workspace.model):,}</b> trainable parameters</p>"
        f"<table cellspacing='6'>{rows}</table>"
    )
