"""The app's run folders and autosave, on the GUI thread (the writing itself happens in the training
thread: explorer.runs.app_runs.RunRecorder).

Every training in the window is recorded as a run under `runs_root()`:
AppDataLocation/runs/<start time>-<family>. Training the same workspace again appends to its run;
a new model, new data or another checkpoint starts a new one. The keeper holds the current run's
FolderLock for as long as the workspace is open, so another instance never offers it for
recovery, and marks it closed when the app lets go of it cleanly (another workspace, closing the
window). Settings (QSettings):

    runs/autosave_minutes   a resume-able checkpoint of the running training every N minutes,
                            and at a pause (0: only when a training stops)
    runs/snapshot_every     a snapshot for the timeline every N steps (0: none)
    runs/keep               how many finished runs are kept; older ones are deleted
    runs/tensorboard        1: TensorBoard scalars too (the [tensorboard] extra; ~1 ms a step)
    runs/data_dir           where runs go instead of AppDataLocation (tests, `--smoke`)
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QSettings, QStandardPaths

from explorer.durable import FolderLock

DEFAULTS = {"autosave_minutes": 5.0, "snapshot_every": 100, "keep": 5, "tensorboard": 0}
LIMITS = {"autosave_minutes": (0.0, 24 * 60.0), "snapshot_every": (0, 1_000_000), "keep": (1, 1000),
          "tensorboard": (0, 1)}


def runs_root(settings: QSettings) -> Path:
    """AppDataLocation/runs, or runs/data_dir/runs when that setting is given."""
    base = settings.value("runs/data_dir") or QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.AppDataLocation)
    return Path(str(base)) / "runs"


def read_setting(settings: QSettings, name: str):
    """A runs/ setting as its default's type, within its limits (a hand-edited file may say
    anything)."""
    default = DEFAULTS[name]
    try:
        value = type(default)(float(settings.value(f"runs/{name}", default)))
    except (TypeError, ValueError):
        return default
    low, high = LIMITS[name]
    return min(max(value, low), high)


class RunKeeper(QObject):
    def __init__(self, bus, settings: QSettings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bus = bus
        self.settings = settings
        self.folder: Path | None = None  # the current workspace's run, once it has trained
        self.recorder = None  # the running segment's RunRecorder
        self._workspace = None
        self._lock: FolderLock | None = None
        self._origins: dict[int, str] = {}  # id(workspace) -> the checkpoint it was opened from
        bus.workspace_changed.connect(self._on_workspace)

    @property
    def root(self) -> Path:
        return runs_root(self.settings)

    def setting(self, name: str):
        return read_setting(self.settings, name)

    def set_setting(self, name: str, value) -> None:
        self.settings.setValue(f"runs/{name}", value)
        if name == "autosave_minutes" and self.recorder is not None:
            self.recorder.autosave_s = 60.0 * self.setting(name)  # the running training too

    # -- the current run -------------------------------------------------------------------------

    def note_origin(self, workspace, folder: str | Path) -> None:
        """`workspace` was loaded from the checkpoint `folder`: its run carries on its curves."""
        self._origins = {id(workspace): str(folder)}

    def adopt(self, workspace, folder: str | Path) -> None:
        """Continue the run in `folder` with `workspace` (reopened after a crash)."""
        self.release()
        lock = FolderLock(folder)
        lock.acquire()  # a one-line UserError if another instance took it meanwhile
        self._workspace, self._lock, self.folder = workspace, lock, Path(folder)
        self.bus.run_folder_changed.emit(str(self.folder))

    def recorder_for(self, workspace):
        """A RunRecorder for the next training of `workspace`, in its run (a new one for a new
        workspace). It is used, and its folder written, in the training thread."""
        from explorer.runs.app_runs import RunRecorder, new_run_folder, prune_runs

        first = workspace is not self._workspace or self.folder is None
        if first:
            self.release()
            folder = new_run_folder(self.root, workspace.family)
            lock = FolderLock(folder)
            lock.acquire()
            folder.mkdir()  # there for a viewer at once; the worker fills it
            self._workspace, self._lock, self.folder = workspace, lock, folder
        root, keep, folder = self.root, self.setting("keep"), self.folder
        self.recorder = RunRecorder(
            folder, first, notice=lambda message: None,  # the worker connects its signal
            autosave_s=60.0 * self.setting("autosave_minutes"),
            snapshot_every=self.setting("snapshot_every"),
            resumed_from=self._origins.get(id(workspace)) if first else None,
            prune=lambda: prune_runs(root, keep, in_use=(folder,)),
            tensorboard=bool(self.setting("tensorboard")))
        if first:
            self.bus.run_folder_changed.emit(str(folder))
        return self.recorder

    def release(self) -> None:
        """Let go of the current run: marked closed (no recovery offer), lock released."""
        from explorer.runs.app_runs import CLOSED, mark

        self.recorder = None
        if self._lock is not None:
            if (self.folder / "config.json").is_file():
                mark(self.folder, CLOSED)
            self._lock.release()
            self._lock = None
        if self.folder is not None:
            self.folder = None
            self.bus.run_folder_changed.emit("")
        self._workspace = None

    def _on_workspace(self, workspace) -> None:
        if workspace is not self._workspace:
            self.release()  # (the controller stopped the training first)
