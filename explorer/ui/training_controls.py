"""The training dock: Train, Pause, Step, Stop, and the knobs that may change while it trains."""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

DEVICES = ("auto", "cpu", "cuda", "mps")
DEFAULT_SPAN = 1000  # steps a first Train trains
# the dock's names of TrainConfig fields, for a message that asks to change them
FIELD_NAMES = {"batch_size": "batch size", "context": "context"}


def settings_advice(error) -> str:
    """An explorer.errors.SettingsError as the app says it: the Training dock's fields, not the
    CLI's flags."""
    fields = " or ".join(f"“{FIELD_NAMES.get(name, name)}”" for name in error.settings)
    return f"{error.problem}: make the Training dock's {fields} smaller"


class TrainingControls(QWidget):
    def __init__(self, window) -> None:
        super().__init__(window)
        self.setObjectName("training_controls")
        self.controller = window.controller
        a = window.actions

        buttons = QGridLayout()
        for i, action in enumerate((a.train, a.pause, a.step, a.stop, a.save_checkpoint, a.resume)):
            button = QToolButton()
            button.setDefaultAction(action)
            button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            buttons.addWidget(button, i // 2, i % 2)

        self.lr = QDoubleSpinBox()
        self.lr.setDecimals(6)
        self.lr.setRange(1e-6, 10.0)
        self.lr.setSingleStep(1e-4)
        self.lr.setToolTip("Peak learning rate η of the optimiser; applies from the next step")
        self.batch_size = QSpinBox()
        self.batch_size.setRange(1, 4096)
        self.batch_size.setToolTip("Sequences per optimisation step; applies from the next batch")
        self.context = QSpinBox()
        self.context.setRange(2, 1_000_000)
        self.context.setToolTip("Tokens per training block of a language model (a GPT's or "
                                "BERT's blocks, an RNN LM's chunks); pairs have their own lengths")
        self.clip_enabled = QCheckBox("clip")
        self.clip_enabled.setToolTip("Clip the global gradient norm: g ← g·min(1, τ/‖g‖)")
        self.clip = QDoubleSpinBox()
        self.clip.setDecimals(3)
        self.clip.setRange(0.001, 1000.0)
        self.clip.setToolTip("Gradient clipping threshold τ on the global norm (the dashed line)")
        self.device = QComboBox()
        self.device.addItems(DEVICES)
        self.device.setToolTip("Where the model trains: auto picks cuda, then mps, then cpu")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip("Fixed random seed: the same seed, data and model train identically")
        # "until step N", as `explorer train --steps N`: after a Stop, Train goes on towards it
        self.steps = QSpinBox()
        self.steps.setRange(1, 10_000_000)
        self.steps.setValue(DEFAULT_SPAN)
        self.steps.setToolTip(
            "Train stops at this step, as explorer train --steps N does: after a Stop, Train goes "
            "on towards it. Once the model is there, the field moves on by as many steps again.")
        self._span = DEFAULT_SPAN  # how far the last Train went: how far the next one goes on

        clip_row = QWidget()
        clip_layout = QGridLayout(clip_row)
        clip_layout.setContentsMargins(0, 0, 0, 0)
        clip_layout.addWidget(self.clip_enabled, 0, 0)
        clip_layout.addWidget(self.clip, 0, 1)
        form = QFormLayout()
        form.addRow("learning rate", self.lr)
        form.addRow("batch size", self.batch_size)
        form.addRow("context", self.context)
        form.addRow("clip τ", clip_row)
        form.addRow("device", self.device)
        form.addRow("seed", self.seed)
        form.addRow("train until step", self.steps)

        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addLayout(form)
        layout.addStretch(1)

        window.bus.train_config_changed.connect(self.show_config)
        window.bus.workspace_changed.connect(self._on_workspace)
        window.bus.training_state.connect(self._on_training_state)
        self.lr.editingFinished.connect(self._apply)
        self.batch_size.editingFinished.connect(self._apply)
        self.context.editingFinished.connect(self._apply)
        self.clip.editingFinished.connect(self._apply)
        self.clip_enabled.toggled.connect(self._apply)
        self.device.currentTextChanged.connect(self._apply)
        self.seed.editingFinished.connect(self._apply)

    def steps_to_train(self, step: int) -> int:
        """How many steps Train trains a model at `step`: up to the "train until step" field."""
        self._move_on(step)
        self._span = self.steps.value() - step
        return self._span

    def _move_on(self, step: int) -> None:
        """A model at (or past) the field's step: the field moves on by the last span. A step
        still ahead is kept, whichever model is open: it means what it says."""
        if self.steps.value() <= step:
            self.steps.setValue(step + self._span)

    def _on_workspace(self, workspace) -> None:
        if workspace is not None:
            self._move_on(workspace.step)
            self.context.setEnabled(not workspace.is_seq2seq)

    def _on_training_state(self, state: str) -> None:
        workspace = self.controller.workspace
        if state in ("idle", "stopped") and workspace is not None:
            self._move_on(workspace.step)  # reached: the field shows where Train goes next

    def show_config(self, config) -> None:
        """Show the controller's TrainConfig: what the boxes emit while they change is no edit."""
        if config is None:
            return
        widgets = (self.lr, self.batch_size, self.context, self.clip_enabled, self.clip,
                   self.device, self.seed)
        blockers = [QSignalBlocker(widget) for widget in widgets]
        try:
            self.lr.setValue(config.lr)
            self.batch_size.setValue(config.batch_size)
            self.context.setValue(config.context)
            self.clip_enabled.setChecked(config.clip is not None)
            self.clip.setEnabled(config.clip is not None)
            if config.clip is not None:
                self.clip.setValue(config.clip)
            self.device.setCurrentText(config.device)
            self.seed.setValue(config.seed)
        finally:
            for blocker in blockers:
                blocker.unblock()

    def _apply(self, *_) -> None:
        self.clip.setEnabled(self.clip_enabled.isChecked())
        self.controller.update_train_config(
            lr=self.lr.value(),
            batch_size=self.batch_size.value(),
            context=self.context.value(),
            clip=self.clip.value() if self.clip_enabled.isChecked() else None,
            device=self.device.currentText(),
            seed=self.seed.value(),
        )
