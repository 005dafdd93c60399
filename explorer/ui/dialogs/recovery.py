"""Train ▸ Autosave and runs…, and the dialog that offers a run cut short by a crash."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

DISCARD = 2  # RecoveryDialog's result besides Accepted (Reopen) and Rejected (ask again later)


class RecoveryDialog(QDialog):
    """Reopen (accept), Discard (done(DISCARD)); Escape decides later: offered at the next start."""

    def __init__(self, run, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recovery_dialog")
        self.setWindowTitle("Reopen the interrupted training?")
        self.run = run
        when = time.strftime("%a %d %b %Y, %H:%M", time.localtime(run.saved_at))
        self.message = QLabel(
            f"<b>Training of {run.model} stopped unexpectedly at step {run.last_step}</b> "
            f"({when}).")
        self.message.setWordWrap(True)
        saved = ("its last autosave" if run.saved_step == run.last_step
                 else f"its last autosave, of step {run.saved_step}")
        self.detail = QLabel(
            f"Reopen loads {saved}, weights and optimizer, ready to train on from there. "
            "Discard stops offering it; its folder stays until older runs are cleared.")
        self.detail.setWordWrap(True)
        self.folder = QLabel(str(run.folder))
        self.folder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.folder.setToolTip("The run folder: config.json, metrics.jsonl, snapshots and the "
                               "last checkpoint")
        self.folder.setStyleSheet("color: palette(placeholder-text);")
        buttons = QDialogButtonBox(self)
        self.reopen_button = QPushButton("&Reopen")
        self.reopen_button.setToolTip(f"Open the model at step {run.saved_step} and keep "
                                      "recording into the same run")
        self.discard_button = QPushButton("&Discard")
        self.discard_button.setToolTip("Do not offer this run again (nothing is deleted)")
        buttons.addButton(self.reopen_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(self.discard_button, QDialogButtonBox.ButtonRole.DestructiveRole)
        self.reopen_button.setDefault(True)
        self.reopen_button.clicked.connect(self.accept)
        self.discard_button.clicked.connect(lambda: self.done(DISCARD))
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.detail)
        layout.addWidget(self.folder)
        layout.addWidget(buttons)
        self.setMinimumWidth(460)


class AutosaveDialog(QDialog):
    """The runs/ settings of explorer/ui/autosave.py."""

    def __init__(self, keeper, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("autosave_dialog")
        self.setWindowTitle("Autosave and runs")
        self.keeper = keeper
        self.minutes = QDoubleSpinBox()
        self.minutes.setRange(0, 24 * 60)
        self.minutes.setDecimals(1)
        self.minutes.setSuffix(" min")
        self.minutes.setSpecialValueText("off")
        self.minutes.setValue(keeper.setting("autosave_minutes"))
        self.minutes.setToolTip("While a training runs, save a checkpoint you can resume from "
                                "(weights, optimizer, step) this often; 0 turns it off (the run "
                                "is still saved whenever training stops)")
        self.snapshots = QSpinBox()
        self.snapshots.setRange(0, 1_000_000)
        self.snapshots.setSuffix(" steps")
        self.snapshots.setSpecialValueText("none")
        self.snapshots.setValue(keeper.setting("snapshot_every"))
        self.snapshots.setToolTip("A full snapshot for scrubbing through training this often")
        self.keep = QSpinBox()
        self.keep.setRange(1, 1000)
        self.keep.setValue(keeper.setting("keep"))
        self.keep.setToolTip("Older runs are deleted when a new one starts; the open run, runs "
                             "another process writes and runs with a .keep file stay")
        self.tensorboard = QCheckBox("Write TensorBoard scalars too")
        self.tensorboard.setChecked(bool(keeper.setting("tensorboard")))
        self.tensorboard.setToolTip("For `tensorboard --logdir` on the runs folder; needs the "
                                    "[tensorboard] extra and costs about 1 ms a step")
        where = QLabel(str(keeper.root))
        where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        where.setToolTip("Every training in the app is recorded here, one folder per run")
        form = QFormLayout()
        form.addRow("Autosave every", self.minutes)
        form.addRow("Snapshot every", self.snapshots)
        form.addRow("Keep the newest runs", self.keep)
        form.addRow("", self.tensorboard)
        form.addRow("Runs folder", where)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def accept(self) -> None:
        self.keeper.set_setting("autosave_minutes", self.minutes.value())
        self.keeper.set_setting("snapshot_every", self.snapshots.value())
        self.keeper.set_setting("keep", self.keep.value())
        self.keeper.set_setting("tensorboard", int(self.tensorboard.isChecked()))
        super().accept()
