"""RunWatcher: follow a run folder that another process writes, on the GUI thread, without a
polling storm (reusable by any view of a run: the timeline, a compare view).

A QFileSystemWatcher on the folder, metrics.jsonl and snapshots/ asks for a check; requests that
arrive while one is pending are coalesced into one check COALESCE_MS later. A QTimer polls every
`poll_ms` (2 s) as well, for network and synced folders whose changes send no notification. Each
check is explorer.runs.RunFollower.poll(): two os.stat calls, and a read of only the bytes that
metrics.jsonl grew by.

    watcher = RunWatcher(folder, reader=reader_already_read)   # or None: read from the start
    watcher.rows_added.connect(...)        # (rows, reset): new rows; reset = the file was replaced
    watcher.snapshots_changed.connect(...) # [Snapshot], oldest first
    watcher.state_changed.connect(...)     # (RunState, one-line message)
    watcher.start()
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

from explorer.errors import UserError
from explorer.history import bad_lines_note
from explorer.runs import RunFollower, RunReader, RunState, layout

COALESCE_MS = 100  # file-change notifications closer than this make one check
POLL_MS = 2000  # the fallback for filesystems that send no notifications
IDLE_AFTER_S = 2.0  # no growth for this long and no live writer: the writer stopped


class RunWatcher(QObject):
    rows_added = Signal(object, bool)  # list[dict] of new metrics rows, reset
    snapshots_changed = Signal(object)  # list[explorer.runs.Snapshot]
    state_changed = Signal(object, str)  # explorer.runs.RunState, a one-line message

    def __init__(self, folder: str | Path, reader: RunReader | None = None,
                 poll_ms: int = POLL_MS, idle_after_s: float = IDLE_AFTER_S,
                 watch_rows: bool = True, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.folder = Path(folder)
        # False for the app's own training: it draws its steps as it makes them, so metrics.jsonl
        # growing (a few times a second) asks for no check; the poll still reads the rows
        self.watch_rows = watch_rows
        self.follower = RunFollower(self.folder, idle_after_s=idle_after_s)
        if reader is not None:  # rows a job already read: go on from its offset
            self.follower.reader = reader
        self.idle_after_s = idle_after_s
        self.state: RunState | None = None
        self.message = ""
        self.checks = 0  # how many checks ran (tests: no polling storm)
        self._files = QFileSystemWatcher(self)
        self._files.fileChanged.connect(self.request_check)
        self._files.directoryChanged.connect(self.request_check)
        self._coalesce = QTimer(self)
        self._coalesce.setSingleShot(True)
        self._coalesce.setInterval(COALESCE_MS)
        self._coalesce.timeout.connect(self.check)
        self._poll = QTimer(self)
        self._poll.setInterval(poll_ms)
        self._poll.timeout.connect(self.check)

    @property
    def reader(self) -> RunReader:
        return self.follower.reader

    def start(self) -> None:
        """Check once now, then on every change and every poll interval."""
        if layout.writer_alive(self.folder) is False:  # nobody writes it: say so at once
            self.follower.idle_after_s = 0.0
        self._watch_paths()
        self._poll.start()
        self.check()
        self.follower.idle_after_s = self.idle_after_s

    def stop(self) -> None:
        self._poll.stop()
        self._coalesce.stop()
        paths = self._files.files() + self._files.directories()
        if paths:
            self._files.removePaths(paths)

    def request_check(self, *_path) -> None:
        """A change was seen: check once, soon, however many notifications arrive meanwhile."""
        if not self._coalesce.isActive():
            self._coalesce.start()

    def _watch_paths(self) -> None:
        """The folder (metrics.jsonl or snapshots/ appearing), snapshots/ and, with watch_rows,
        the file; a file replaced by a rename drops out of the watcher, so the list is renewed at
        every check."""
        wanted = [self.folder, self.folder / layout.SNAPSHOTS_DIR]
        if self.watch_rows:
            wanted.append(self.folder / layout.METRICS_FILE)
        watched = set(self._files.files() + self._files.directories())
        missing = [str(p) for p in wanted if p.exists() and str(p) not in watched]
        if missing:
            self._files.addPaths(missing)

    def check(self) -> None:
        """One RunFollower.poll(): emit what grew and, when it changed, the run's state."""
        self.checks += 1
        try:
            update = self.follower.poll()
        except OSError as exc:  # the folder went away, a permission changed: say it, keep going
            self._set_state(RunState.STOPPED, f"cannot read the run: {exc.strerror or exc}")
            return
        self._watch_paths()
        if update.rows or update.reset:
            self.rows_added.emit(update.rows, update.reset)
        if update.snapshots_changed:
            self.snapshots_changed.emit(update.snapshots)
        self._set_state(update.state, self.describe(update.state))

    def last_step(self) -> int | None:
        for row in reversed(self.reader.rows):
            if isinstance(row.get("step"), int):
                return row["step"]
        return None

    def describe(self, state: RunState) -> str:
        name, step = self.folder.name, self.last_step()
        at = f" at step {step}" if step is not None else ""
        if state is RunState.LIVE:
            return f"following run {name}{at}"
        if state is RunState.WAITING:
            return f"following run {name}: waiting for its first rows"
        cut = "; ".join(note for note in (bad_lines_note(self.reader.bad_line_numbers),
                                          self._history_cut(step)) if note)
        if cut:  # damaged lines skipped, or rows missing from a run that went on: said, not hidden
            return f"run {name}: {cut}"
        if state is RunState.FINISHED:
            finished = self.reader.finished or {}
            reason = finished.get("reason")
            why = f" ({reason})" if reason and reason != "done" else ""
            return f"run {name} finished{at}{why}"
        alive = layout.writer_alive(self.folder)
        gone = "no growth" if alive is None else "pid gone"
        return f"run {name}: writer stopped ({gone}){at}"

    def _history_cut(self, last_row: int | None) -> str:
        """"history cut at step N while the checkpoint is at step M" when metrics.jsonl ends
        before the run's latest checkpoint (explorer.training.checkpoint.history_cut)."""
        try:
            checkpoint = self.reader.config().get("step")
        except UserError:
            return ""
        if not isinstance(checkpoint, int) or last_row is None or last_row >= checkpoint:
            return ""
        return f"history cut at step {last_row} while the checkpoint is at step {checkpoint}"

    def _set_state(self, state: RunState, message: str) -> None:
        if state is not self.state or message != self.message:
            self.state, self.message = state, message
            self.state_changed.emit(state, message)
