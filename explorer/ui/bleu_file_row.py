"""The BLEU panel's file row: translate every source of a `source<TAB>reference` file greedily and
score it (explorer.decoding.file_bleu), in a worker. For models that only load (a Hugging Face
Marian, T5 or BART folder) this is how their BLEU is seen; a language model gets one line why."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QWidget

NO_SOURCE = "BLEU needs an encoder-decoder: a language model has no source to translate."


class ParallelFileRow(QWidget):
    scored = Signal(object)  # explorer.decoding.file_bleu.FileBleu

    def __init__(self, runner, bus, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = runner  # the panel's JobRunner: its busy() and shutdown() cover this work
        self.bus = bus  # its state holds the workspace whose BLEU is scored
        self.last = None
        self.button = QPushButton("BLEU of a parallel file…")
        self.button.setToolTip("Greedy-translate each source of a source<TAB>reference file and "
                               "score the translations against the references")
        self.button.clicked.connect(self.choose_file)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.button)
        row.addWidget(self.status, 1)
        runner.done.connect(self._on_done)
        runner.failed.connect(lambda _job, message: self.status.setText(message))

    def set_workspace(self, workspace) -> None:
        from explorer.families import family_of

        translates = workspace is not None and family_of(workspace.model).has_source
        self.button.setEnabled(translates)
        self.status.setText("" if translates or workspace is None else NO_SOURCE)

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Parallel file (source<TAB>reference)", "",
                                              "Tab-separated (*.tsv *.txt *.gz);;All files (*)")
        if path:
            self.score_file(path)

    def score_file(self, path: str) -> int:
        from explorer.decoding.file_bleu import parallel_file_bleu

        self.status.setText(f"Translating {path}…")
        return self.runner.submit(parallel_file_bleu, self.bus.workspace, path)

    def _on_done(self, _job: int, scored) -> None:
        self.last = scored
        self.status.setText(scored.summary())
        self.scored.emit(scored)
