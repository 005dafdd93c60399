"""The data dialog: a built-in task or your own files, with the first pairs, their tokens and the
vocabulary size, before anything is trained."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QRadioButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from explorer.data.tasks import PAIRS
from explorer.errors import UserError

PREVIEW_ROWS = 8
PREVIEW_CHARS = 200  # of each previewed text: laying out one 20 MB line would take gigabytes
TOKENIZER_TIPS = {
    "char": "one token per character: tiny vocabulary, long sequences",
    "word": "one token per whitespace-separated word: short sequences, large vocabulary, "
    "<unk> for rare words",
    "bpe": "byte-pair encoding: frequent words whole, rare words split into subwords",
}


def _clipped(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def read_files(files: list[str]) -> tuple[list[tuple[str, str]], str]:
    """(pairs, kind) from one text file (LM), one TSV (pairs) or two parallel files (pairs)."""
    from explorer.data.readers import read_parallel, read_text, read_tsv

    if len(files) == 2:
        return read_parallel(files[0], files[1]), "seq2seq"
    if len(files) != 1:
        raise UserError("open one text file, one .tsv file of pairs, or two parallel files")
    name = Path(files[0]).name.removesuffix(".gz")
    if name.endswith(".tsv"):
        return read_tsv(files[0]), "seq2seq"
    return [(line, "") for line in read_text(files[0])], "lm"


class DataDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, files: list[str] | None = None,
                 task: str | None = None, family: str | None = None,
                 train_config=None) -> None:
        """`family` and `train_config`: the model a text will train and the settings it will
        train with, for what the text is enough for (explorer.training.text_fit)."""
        super().__init__(parent)
        self.family, self.train_config = family, train_config
        self.fit = None  # explorer.training.text_fit.TextFit of the files, when they are LM text
        self.setObjectName("data_dialog")
        self.setWindowTitle("Data")
        self.setMinimumSize(720, 520)
        from explorer.data.tasks import TASKS

        self.tasks = TASKS
        self.pairs: list[tuple[str, str]] = []
        self.kind = "seq2seq"
        self.files: list[str] = []

        self.use_task = QRadioButton("built-in task")
        self.use_task.setToolTip("Synthetic tasks whose attention patterns are known in advance")
        self.use_files = QRadioButton("files")
        self.use_files.setToolTip(
            "One text file (language model), a .tsv of pairs, or two parallel files"
        )
        self.task = QComboBox()
        for i, (name, spec) in enumerate(TASKS.items()):
            self.task.addItem(name)
            self.task.setItemData(i, f"{spec.description} ({spec.kind})", 3)  # 3 = ToolTipRole
        self.task.setToolTip("Pick a task; its description shows on hover")
        self.files_label = QLabel("no files")
        self.files_label.setWordWrap(True)
        browse = QPushButton("Browse…")
        browse.setToolTip("Open one or two files (.txt, .tsv, .gz)")
        browse.clicked.connect(self._browse)
        self.tokenizer = QComboBox()
        for i, (name, tip) in enumerate(TOKENIZER_TIPS.items()):
            self.tokenizer.addItem(name)
            self.tokenizer.setItemData(i, tip, 3)
        self.tokenizer.setToolTip("How text becomes token ids")

        files_row = QHBoxLayout()
        files_row.addWidget(self.files_label, 1)
        files_row.addWidget(browse)
        form = QFormLayout()
        form.addRow(self.use_task, self.task)
        form.addRow(self.use_files, files_row)
        form.addRow("tokenizer", self.tokenizer)

        self.description = QLabel()
        self.description.setWordWrap(True)
        self.preview = QTableWidget(0, 2)
        self.preview.setHorizontalHeaderLabels(["source", "target"])
        self.preview.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.preview.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.preview.setToolTip("The first training pairs")
        self.tokens = QLabel()
        self.tokens.setWordWrap(True)
        self.tokens.setToolTip("The first pair as the tokenizer splits it")
        self.fit_note = QLabel()  # what the text is enough for
        self.fit_note.setWordWrap(True)
        self.fit_box = QCheckBox()
        self.fit_box.setChecked(True)
        self.fit_box.setToolTip("Set the Training dock's batch size and context to what this "
                                "text fills, so that Train can start on it")
        self.vocab = QLabel()
        self.vocab.setToolTip(
            "Vocabulary sizes, 5 reserved ids (<pad> <bos> <eos> <unk> <mask>) included"
        )
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setToolTip("Build a model of the current architecture on this data")

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.description)
        layout.addWidget(self.preview, 1)
        layout.addWidget(self.tokens)
        layout.addWidget(self.vocab)
        layout.addWidget(self.fit_note)
        layout.addWidget(self.fit_box)
        layout.addWidget(buttons)

        if task in self.tasks:  # the current workspace's task, not the list's first
            self.task.setCurrentText(task)
        self._make_task_splits(self.task.currentText())
        self.use_task.setChecked(True)
        if files:
            self.load_files(files)  # raises UserError on a bad file: the caller shows it
        else:
            self.refresh()
        self.task.currentTextChanged.connect(self._task_changed)
        self.tokenizer.currentTextChanged.connect(lambda *_: self.refresh())
        self.use_task.toggled.connect(lambda *_: self.refresh())

    def load_files(self, files: list[str]) -> None:
        self.pairs, self.kind = read_files(files)
        if not self.pairs:
            raise UserError(f"{files[0]}: no usable lines")
        self.files = list(files)
        self.files_label.setText("\n".join(files))
        self.use_files.setChecked(True)
        self.tokenizer.setCurrentText("word" if self.kind == PAIRS else "char")
        self.refresh()

    def _browse(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(
            self, "Open data", "", "Text (*.txt *.tsv *.gz);;All (*)"
        )
        if files:
            try:
                self.load_files(files)
            except UserError as exc:
                self.description.setText(f"<span style='color:#c0392b'>{exc}</span>")

    def _make_task_splits(self, name: str) -> None:
        from explorer.data.tasks import make_task

        self.task_splits = make_task(
            name, seed=0, n_train=PREVIEW_ROWS * 8, n_val=PREVIEW_ROWS, n_test=1
        )
        self.tokenizer.setCurrentText(self.tasks[name].tokenizer)

    def _task_changed(self, name: str) -> None:
        self._make_task_splits(name)
        self.use_task.setChecked(True)
        self.refresh()

    def refresh(self) -> None:
        if self.use_task.isChecked():
            spec = self.tasks[self.task.currentText()]
            pairs, kind = self.task_splits.train, spec.kind
            self.description.setText(f"<b>{spec.name}</b>: {spec.description}")
        else:
            pairs, kind = self.pairs, self.kind
            unit = "pairs" if kind == PAIRS else "lines"
            self.description.setText(f"{len(pairs):,} {unit} read")
        self.preview.setRowCount(min(PREVIEW_ROWS, len(pairs)))
        for row, (source, target) in enumerate(pairs[:PREVIEW_ROWS]):
            self.preview.setItem(row, 0, QTableWidgetItem(_clipped(source)))
            self.preview.setItem(row, 1, QTableWidgetItem(_clipped(target)))
        self.ok_button.setEnabled(bool(pairs))
        if not pairs:
            return
        from explorer.data.tokenizers import make_tokenizer

        kind_name = self.tokenizer.currentText()
        sources = [s for s, _ in pairs]
        src_tok = make_tokenizer(kind_name, sources)
        first_source = " │ ".join(src_tok.tokens(src_tok.encode(_clipped(pairs[0][0]))))
        if kind == PAIRS:
            tgt_tok = make_tokenizer(kind_name, [t for _, t in pairs])
            first_target = " │ ".join(tgt_tok.tokens(tgt_tok.encode(_clipped(pairs[0][1]))))
            self.tokens.setText(f"tokens: {first_source}  →  {first_target}")
            self.vocab.setText(
                f"vocabulary: source {src_tok.vocab_size}, target {tgt_tok.vocab_size} "
                f"(fitted on {len(pairs):,} pairs)"
            )
        else:
            self.tokens.setText(f"tokens: {first_source}")
            self.vocab.setText(f"vocabulary: {src_tok.vocab_size} (fitted on {len(pairs):,} lines)")
        self._show_fit()

    def _show_fit(self) -> None:
        """What the files' text is enough for, with the Training dock's settings; where it is
        too short for them, the offer to fit them to it."""
        from explorer.training.text_fit import text_fit

        self.fit = None
        if self.use_files.isChecked() and self.files and self.family and self.train_config:
            self.fit = text_fit(self.data_spec(), self.family, self.train_config)
        fit, config = self.fit, self.train_config
        self.fit_note.setVisible(fit is not None)
        self.fit_box.setVisible(fit is not None and not fit.fits and fit.trainable)
        if fit is None:
            return
        settings = f"batch size {config.batch_size} and context {config.context}"
        if fit.fits:
            self.fit_note.setText(f"{fit.tokens:,} training tokens: enough for the Training "
                                  f"dock's {settings}.")
        elif not fit.trainable:
            self.fit_note.setText(f"<span style='color:#c0392b'>{fit.tokens:,} training tokens: "
                                  "too few to train on; open a longer text.</span>")
        else:
            self.fit_note.setText(f"<span style='color:#c0392b'>{fit.tokens:,} training tokens: "
                                  f"too few for the Training dock's {settings}.</span>")
            self.fit_box.setText(f"Fit the Training dock to this text: batch size "
                                 f"{fit.batch_size}, context {fit.context}")
        self.ok_button.setEnabled(fit.trainable)

    def fitted_settings(self) -> dict | None:
        """The batch size and context to train with, when the text needs them and the offer is
        taken; else None."""
        fit = self.fit
        if fit is None or fit.fits or not fit.trainable or not self.fit_box.isChecked():
            return None
        return {"batch_size": fit.batch_size, "context": fit.context}

    def data_spec(self):
        """The choice as an explorer.training.setup.DataSpec, which the workspace is built from."""
        from explorer.training.setup import DataSpec

        tokenizer = self.tokenizer.currentText()
        if self.use_task.isChecked():
            return DataSpec(task=self.task.currentText(), tokenizer=tokenizer)
        if len(self.files) == 2:
            return DataSpec(src=self.files[0], tgt=self.files[1], tokenizer=tokenizer)
        if self.kind == PAIRS:
            return DataSpec(tsv=self.files[0], tokenizer=tokenizer)
        return DataSpec(text=self.files[0], tokenizer=tokenizer)
