"""The main window's New model and Data dialogs, and the rebuild they ask for: a new workspace
from the model config and/or data spec they give (the missing half kept), asked about before a
trained model gives way. A mixin of MainWindow (its controller, status bar and `last_dialog`)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from explorer.ui.app import APPLICATION


class ModelDialogs:
    def new_model(self, preset: str | None = None) -> None:
        from explorer.ui.dialogs.new_model import NewModelDialog

        workspace = self.controller.workspace
        sizes = {}
        if workspace is not None:
            sizes["vocab_size"] = workspace.tokenizer.vocab_size
            if workspace.src_tokenizer is not None:
                sizes["src_vocab_size"] = workspace.src_tokenizer.vocab_size
        dialog = NewModelDialog(self, preset=preset, **sizes)
        if workspace is not None:
            dialog.set_family(workspace.family)
        dialog.accepted.connect(lambda: self._build_from_dialogs(dialog.model_config(), None))
        dialog.open()
        self.last_dialog = dialog

    def data_dialog(self) -> None:
        from explorer.ui.dialogs.data import DataDialog

        workspace = self.controller.workspace
        self._show_data_dialog(DataDialog(self, task=getattr(workspace, "task", None),
                                          **self._text_target()))

    def _text_target(self) -> dict:
        """The family a text opened now would train (the current one where it reads text, as
        explorer.training.setup.next_workspace decides) and the settings it would start with."""
        from explorer.training.config import TrainConfig
        from explorer.training.setup import DEFAULT_FAMILIES, data_kind

        config = getattr(getattr(self.controller.workspace, "model", None), "config", None)
        reads_text = config is not None and data_kind(config.family) == "lm"
        return {"family": config.family if reads_text else DEFAULT_FAMILIES["lm"],
                "train_config": TrainConfig()}  # what set_workspace gives a new model

    def _show_data_dialog(self, dialog) -> None:
        dialog.accepted.connect(lambda: self._build_from_dialogs(
            None, dialog.data_spec(), dialog.fitted_settings()))
        dialog.open()
        self.last_dialog = dialog

    def _build_from_dialogs(self, model_config, data_spec, settings: dict | None = None,
                            confirmed: bool = False) -> None:
        """A new workspace from a model config and/or a data spec; the missing half is kept.
        A trained model is replaced only once the user says so; `settings` (the batch size and
        context the data dialog fitted to a short text) go to the Training dock."""
        from explorer.ui.controller import build_workspace_job

        workspace = self.controller.workspace
        if not confirmed and workspace is not None and workspace.step > 0:
            self._confirm_replace(workspace.step, lambda: self._build_from_dialogs(
                model_config, data_spec, settings, confirmed=True))
            return
        self.controller.stop_training()
        self.controller.run_job(
            build_workspace_job, model_config, data_spec, workspace,
            on_done=lambda built: self._built(built, settings), label="building the model",
        )

    def _confirm_replace(self, step: int, replace) -> None:
        """Ask, without blocking (a test answers it through `last_dialog`), before a model
        trained to `step` gives way to a new, untrained one."""
        box = QMessageBox(
            QMessageBox.Icon.Question, APPLICATION,
            f"Replace the model trained to step {step:,} with a new, untrained one? Its training "
            "is lost unless saved (File ▸ Save checkpoint, Ctrl+S).",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, self,
        )
        box.setObjectName("replace_box")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        yes = box.button(QMessageBox.StandardButton.Yes)
        yes.setText("Replace")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.finished.connect(lambda _result: replace() if box.clickedButton() == yes else None)
        box.open()
        self.last_dialog = box

    def _built(self, workspace, settings: dict | None) -> None:
        self.controller.set_workspace(workspace)
        if settings:
            self.controller.update_train_config(**settings)
            self.statusBar().showMessage(
                f"Batch size {settings['batch_size']} and context {settings['context']}: "
                "fitted to the text (Training dock)", 10_000)
