"""Recovery on relaunch: a run the app was writing when it crashed (or was killed) is offered back.

Once the window has painted and its panels exist, the runs folder is searched for runs that no
live process holds and that the app never let go of cleanly (explorer.runs.app_runs). Each one,
newest first, gets a RecoveryDialog: Reopen loads its last saved checkpoint, weights and optimizer,
into the window and continues the same run when Train is pressed; Discard marks it so it is not
offered again (nothing is deleted). `attach_runs` also wires the run keeper and its settings
dialog into the window.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from explorer.ui.autosave import RunKeeper
from explorer.ui.jobs import one_line


def attach_runs(window) -> None:
    """Run folders and autosave for the window's trainings, and the recovery offer."""
    window.controller.runs = RunKeeper(window.bus, window.settings, window)
    window.recovery = Recovery(window)
    window.actions.autosave.triggered.connect(lambda: show_autosave_dialog(window))


def show_autosave_dialog(window) -> None:
    from explorer.ui.dialogs.recovery import AutosaveDialog

    window.last_dialog = AutosaveDialog(window.controller.runs, window)
    window.last_dialog.open()


class Recovery(QObject):
    offered = Signal(object)  # the RecoveryDialog now shown
    reopened = Signal(object)  # the workspace reopened from an interrupted run

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.dialog = None
        self._answered: set[Path] = set()  # offered in this session already
        self.checks = 0  # how many times the runs folder was searched
        self._painted = self._panels = self._started = False
        window.first_painted.connect(lambda _: self._ready("painted"))
        window.panels_created.connect(lambda: self._ready("panels"))

    def _ready(self, what: str) -> None:
        setattr(self, f"_{what}", True)
        if self._painted and self._panels and not self._started:
            self._started = True
            QTimer.singleShot(0, self.offer_next)  # after the paint and the panels' first layout

    def offer_next(self) -> None:
        """Show the dialog for the newest interrupted run not answered yet, if any."""
        from explorer.runs.app_runs import interrupted_runs
        from explorer.ui.dialogs.recovery import RecoveryDialog

        keeper = self.window.controller.runs
        if self.window._closing or self.dialog is not None or keeper is None:
            return
        self.checks += 1
        runs = [run for run in interrupted_runs(keeper.root) if run.folder not in self._answered]
        if not runs:
            return
        run = runs[0]
        self._answered.add(run.folder)
        self.dialog = RecoveryDialog(run, self.window)
        self.dialog.finished.connect(lambda result: self._answer(run, result))
        self.dialog.open()
        self.offered.emit(self.dialog)

    def _answer(self, run, result: int) -> None:
        from PySide6.QtWidgets import QDialog

        from explorer.runs.app_runs import DISCARDED, mark
        from explorer.ui.dialogs.recovery import DISCARD

        self.dialog.deleteLater()
        self.dialog = None
        if result == QDialog.DialogCode.Accepted:
            self.reopen(run.folder)
            return  # one workspace at a time: the others are offered at the next start
        if result == DISCARD:
            mark(run.folder, DISCARDED)
        self.offer_next()

    def reopen(self, folder: str | Path) -> None:
        """Load the run's last checkpoint (in a worker) and make it the current run again."""
        from explorer.ui.controller import _load_checkpoint

        self.window.controller.run_job(_load_checkpoint, str(folder),
                                       on_done=lambda workspace: self._reopened(workspace, folder),
                                       label="reopening the interrupted run")

    def _reopened(self, workspace, folder) -> None:
        from explorer.training.checkpoint import changed_data_files

        window, controller = self.window, self.window.controller
        if window._closing:
            return
        controller.set_workspace(workspace)
        try:
            controller.runs.adopt(workspace, folder)  # Train appends to the same run
        except Exception as exc:  # noqa: BLE001 - another instance took it: a new run instead
            window.show_error(one_line(exc))
        if workspace.data is None:
            window.show_error(f"Reopened {Path(folder).name} at step {workspace.step}, but its "
                              "training data cannot be read; choose data with Model ▸ Data… to "
                              "train on")
        else:
            changed = changed_data_files(folder, workspace)
            note = (f"; {Path(changed[0]).name} changed since, training uses its new content"
                    if changed else "")
            window.statusBar().showMessage(
                f"Reopened {Path(folder).name} at step {workspace.step}: Train continues it"
                + note, 15_000)
        self.reopened.emit(workspace)
