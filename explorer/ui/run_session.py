"""The run on show: open a run folder, scrub through its snapshots, follow it while it grows.

    session.open_run(folder)                 # its latest checkpoint, whole history, timeline
    session.set_run(folder, load_latest=False)  # only its timeline (the app's own training run)
    session.choose(index)                    # the timeline / keys: show that snapshot

Loading runs in the controller's job runner (newest wins, never on the GUI thread). A loaded
snapshot becomes the controller's workspace, so every panel re-reads or re-probes it as it does
any model (the probe input stays). `bus.run` (a RunView) names the workspace the run shows: the
curves and BLEU panels keep the run's whole recorded curves for it (`bus.run_curves`) and mark the
shown step (`bus.run_step`). Any other workspace (a new model, another checkpoint) closes the run.

Training in the app: a scrub is refused with a one-line message while the model trains (the
trainer owns the weights). The app's training writes its own run (explorer/ui/autosave.py,
`bus.run_folder_changed`): the timeline switches to that run (`load_latest=False`: the workspace
and curves stay), its new snapshots join it, and once training stops they can be scrubbed. A run
opened with `open_run` and then trained is left unchanged on disk.
A run still being written is followed by a RunWatcher (explorer/ui/run_watch.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from PySide6.QtCore import QObject

from explorer.ui.timeline import add_timeline_dock

MESSAGE_MS = 10_000


@dataclass
class RunView:
    """What `bus.run` holds: the run folder and the workspace it shows (at `step`)."""

    folder: Path
    workspace: object = None
    step: int | None = None


@dataclass
class RunCurves:
    """A run's recorded rows for the curves (explorer.runs.Curves): all, or those appended."""

    folder: Path
    curves: object
    reset: bool


@dataclass(frozen=True)
class Position:
    """A timeline position: a snapshot folder, or the run folder for its latest checkpoint."""

    step: int
    path: Path


@dataclass
class OpenedRun:
    folder: Path
    reader: object  # explorer.runs.RunReader, its rows read
    workspace: object
    curves: object


def read_run(folder: str) -> OpenedRun:
    """In a worker: the run's rows and curves (its workspace comes next: read_latest)."""
    from explorer.runs import RunReader

    reader = RunReader(folder)
    reader.read_new()
    return OpenedRun(Path(folder), reader, None, reader.curves())


def read_latest(opened: OpenedRun) -> OpenedRun:
    """In a worker: the run's latest checkpoint as a workspace, its history from the rows read."""
    from explorer.training.checkpoint import load_checkpoint

    # metrics.jsonl parsed once, by the reader
    opened.workspace = load_checkpoint(opened.folder, metrics_rows=opened.reader.rows)
    return opened


def read_position(position: Position, rows: list[dict], run_folder: Path):
    """In a worker: the workspace of one timeline position, its history the run's up to it."""
    from explorer.errors import UserError
    from explorer.runs.reader import history_from_rows
    from explorer.training.checkpoint import load_checkpoint

    if not (position.path / "config.json").is_file():
        where = position.path.relative_to(run_folder) if position.path != run_folder else "."
        raise UserError(f"the snapshot of step {position.step} is gone ({where} was deleted)")
    workspace = load_checkpoint(position.path)
    workspace.history = history_from_rows(rows, upto=position.step)
    return workspace


def latest_step(folder: Path) -> int | None:
    """The step of the run's top-level checkpoint (its config.json), None when unreadable."""
    import json

    try:
        step = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("step")
    except (OSError, ValueError, AttributeError):
        return None
    return step if isinstance(step, int) else None


class RunSession(QObject):
    def __init__(self, window) -> None:
        super().__init__(window)
        self.window, self.controller, self.bus = window, window.controller, window.bus
        self.dock, self.timeline = add_timeline_dock(window)
        self.watcher = None  # explorer.ui.run_watch.RunWatcher of the run on show
        self.folder: Path | None = None
        self.viewer = True  # opened by open_run: its curves come from the folder
        self.positions: list[Position] = []
        self.shown: Position | None = None
        self._pending: int | None = None  # the job loading a chosen position
        self._opening: int | None = None  # the job reading a run being opened
        self._last_state = None  # the RunState the status bar said last
        self.timeline.position_chosen.connect(self.choose)
        self.bus.workspace_changed.connect(self._on_workspace)
        self.bus.training_state.connect(self._on_training_state)
        self.bus.probe.connect(self._on_probe)
        self.bus.run_folder_changed.connect(self._on_app_run)
        self.controller.jobs.failed.connect(self._on_job_failed)

    # -- opening ---------------------------------------------------------------------------------

    def open_run(self, folder: str | Path) -> None:
        """Open a run folder: its whole recorded history becomes the curves at once, then its
        latest checkpoint the workspace and its snapshots the timeline; a run still being written
        is followed."""
        self.controller.stop_training()
        self._pending = self.controller.run_job(read_run, str(folder), on_done=self._on_read,
                                                label="opening the run")
        self._opening = self._pending

    def _on_read(self, opened: OpenedRun) -> None:
        """The curves first (a long run's model may take longer than its rows)."""
        self.close_run()
        self.bus.run = RunView(opened.folder)  # its workspace is on its way
        self.bus.run_curves.emit(RunCurves(opened.folder, opened.curves, reset=True))
        self._pending = self.controller.run_job(read_latest, opened, on_done=self._on_opened,
                                                label="opening the run's model")
        self._opening = self._pending

    def _on_opened(self, opened: OpenedRun) -> None:
        self._pending = self._opening = None
        if self.bus.run is None or self.bus.run.folder != opened.folder:
            return  # closed (another model) meanwhile
        workspace = opened.workspace
        self.bus.run.workspace, self.bus.run.step = workspace, workspace.step
        self.controller.set_workspace(workspace)
        # then (from the same reader) whatever was appended since the rows were read
        self._start(opened.folder, viewer=True, reader=opened.reader)

    def set_run(self, folder: str | Path, load_latest: bool = True) -> None:
        """Show `folder`'s timeline. With `load_latest` as `open_run`; without, the workspace and
        the curves stay (the app's own training writes the run) and only the timeline follows."""
        if load_latest:
            self.open_run(folder)
            return
        self.close_run()
        workspace = self.controller.workspace
        self.bus.run = RunView(Path(folder), workspace, getattr(workspace, "step", None))
        self._start(Path(folder), viewer=False, reader=None)

    def _on_app_run(self, folder: str) -> None:
        """The app's own training writes `folder` (explorer/ui/autosave.py): its timeline follows
        it. "" (the app let go of its run) changes nothing here: a scrub to one of its snapshots
        is such a change, and the timeline stays."""
        if folder and Path(folder) != self.folder:
            self.set_run(folder, load_latest=False)

    def _start(self, folder: Path, viewer: bool, reader) -> None:
        """Follow `folder` (the run `bus.run` names): its timeline, its growth."""
        from explorer.ui.run_watch import RunWatcher

        self.folder, self.viewer = folder, viewer
        self.shown, self._last_state = None, None
        self.bus.run_changed.emit(self.bus.run)
        self.watcher = RunWatcher(folder, reader=reader, watch_rows=viewer, parent=self)
        self.watcher.rows_added.connect(self._on_rows)
        self.watcher.snapshots_changed.connect(self._on_snapshots)
        self.watcher.state_changed.connect(self._on_state)
        self.dock.setWindowTitle(f"Timeline: {folder.name}")
        self.dock.setToolTip(f"The snapshots of the run in {folder}")
        self.dock.show()
        self.dock.raise_()
        self._on_snapshots(self.watcher.reader.snapshots())
        self.watcher.start()
        # the app's own training moves on from the step it started at: no marker until a scrub
        self.bus.run_step.emit(self.bus.run.step if viewer else None)

    def close_run(self) -> None:
        """Stop following; the panels keep the workspace, as a plain checkpoint."""
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher.deleteLater()
            self.watcher = None
        if self.bus.run is None:
            return
        self.folder, self.positions, self.shown = None, [], None
        self.bus.run = None
        self.bus.run_step.emit(None)
        self.bus.run_changed.emit(None)
        self.timeline.set_steps([])
        self.dock.setWindowTitle("Timeline")

    # -- scrubbing -------------------------------------------------------------------------------

    def choose(self, index: int) -> None:
        """Show the model of timeline position `index` (loaded in the job runner)."""
        if not self.positions or not 0 <= index < len(self.positions):
            return
        if self.controller.is_training():
            self._say("Stop training (Ctrl+.) to scrub: the model is training in the app")
            self._show_current()
            return
        position = self.positions[index]
        rows = list(self.watcher.reader.rows)
        self._pending = self.controller.run_job(
            read_position, position, rows, self.folder, on_done=partial(self._on_loaded, position),
            label=f"loading the snapshot of step {position.step}")

    def move_by(self, delta: int) -> None:
        """One snapshot back (-1) or forward (+1): the Alt+Left / Alt+Right actions."""
        if self.positions:
            self.timeline.move_by(delta)

    def _on_loaded(self, position: Position, workspace) -> None:
        self._pending = None
        if self.bus.run is None:
            return  # the run was closed meanwhile
        self.shown = position
        self.bus.run.workspace, self.bus.run.step = workspace, position.step
        self.controller.set_workspace(workspace, keep_probe=True)
        self.bus.run_step.emit(position.step)
        self._show_current()

    def _on_job_failed(self, job: int, _message: str) -> None:
        """The controller shows the error; the timeline goes back to what the panels show."""
        if job == self._opening:  # a run that cannot be opened: no curves of it stay
            self._opening = None
            self.close_run()
        if job == self._pending:
            self._pending = None
            if self.watcher is not None:
                self.watcher.check()  # a deleted snapshot leaves the timeline at once
            self._show_current()

    def _show_current(self) -> None:
        steps = [p.step for p in self.positions]
        step = self.bus.run.step if self.bus.run is not None else None
        if step in steps:
            self.timeline.show_index(steps.index(step))
        elif steps and step is not None:  # a step with no position: training, deleted, unsaved
            nearest = min(range(len(steps)), key=lambda i: abs(steps[i] - step))
            self.timeline.show_index(nearest)
            if self.controller.is_training():
                why = "training"
            elif self.shown is not None and self.shown.step == step:
                why = "deleted; shown from memory"
            else:  # e.g. a training in the app stopped between snapshots: nothing was deleted
                why = "no snapshot; shown from memory"
            self.timeline.step_label.setText(f"step {step} ({why})")

    # -- following -------------------------------------------------------------------------------

    def _on_rows(self, rows: list[dict], reset: bool) -> None:
        if not self.viewer:
            return  # the app's own training draws these steps as it makes them
        from explorer.runs.reader import curves_from_rows

        if reset or any(row.get("event") == "resumed" for row in rows):
            self.bus.run_curves.emit(RunCurves(self.folder, self.watcher.reader.curves(), True))
        else:
            self.bus.run_curves.emit(RunCurves(self.folder, curves_from_rows(rows), False))

    def _on_snapshots(self, snapshots) -> None:
        at_end = not self.positions or self.timeline.index() == len(self.positions) - 1
        positions = [Position(s.step, s.path) for s in snapshots]
        latest = latest_step(self.folder)
        if latest is not None and latest not in {p.step for p in positions}:
            positions.append(Position(latest, self.folder))
            positions.sort(key=lambda p: p.step)
        gone = self.shown is not None and self.shown not in positions
        self.positions = positions
        self.timeline.set_steps([p.step for p in positions])
        self._show_current()
        if gone:
            self._say(f"The snapshot of step {self.shown.step} was deleted: the panels still show "
                      "it, from memory")
        following = self.viewer and at_end and self._pending is None
        if following and positions and self.bus.run is not None \
                and positions[-1].step != self.bus.run.step and not self.controller.is_training():
            self.choose(len(positions) - 1)  # at the newest snapshot: the panels follow the run

    def _on_state(self, state, message: str) -> None:
        """The timeline follows every message ("… at step N"); the status bar, each new state."""
        self.timeline.set_state(message)
        if state is not self._last_state:
            self._last_state = state
            self.window.statusBar().showMessage(message, MESSAGE_MS)

    # -- the rest of the app ---------------------------------------------------------------------

    def _on_workspace(self, workspace) -> None:
        if self.bus.run is not None and workspace is not self.bus.run.workspace:
            self.close_run()  # another model: the run is no longer on show

    def _on_probe(self, snapshot) -> None:
        """The app's own training moves its model on: the timeline names the step the panels
        show (that of their latest probe), not the one the training started at."""
        run = self.bus.run
        if run is None or self.viewer or run.workspace is not self.controller.workspace:
            return
        if run.step != snapshot.step:
            run.step = snapshot.step
            self._show_current()

    def _on_training_state(self, state: str) -> None:
        if state in ("running", "paused") and self.viewer and self.bus.run is not None:
            name = self.folder.name
            self.close_run()
            self.timeline.set_state(f"Training in the app: closed the view of run {name} "
                                    "(its folder is unchanged)")

    def _say(self, message: str) -> None:
        self.window.statusBar().showMessage(message, MESSAGE_MS)
        self.timeline.set_state(message)

    def shutdown(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
