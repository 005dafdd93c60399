"""RunFollower: follow a run folder that another process (maybe on another machine, through a
shared or synced folder) is still writing, without a polling storm.

    follower = RunFollower("runs/dates")
    for update in follower.follow(stop=event):      # blocks between updates
        plot(update.rows); show(update.snapshots); status(update.state)

Each check is two os.stat calls (metrics.jsonl and snapshots/) and reads only what grew. Checks
start every `min_interval_s` and back off, doubling up to `max_interval_s`, while nothing changes;
growth brings them back to the minimum. A file watcher (the app's QFileSystemWatcher) makes it
check at once by calling `notify()`, from any thread; polling remains for filesystems that send no
change notifications (network and synced folders).

The run has stopped being written when its last training segment wrote its `finished` row, or
when nothing grew for `idle_after_s` and no live process holds the run's FolderLock (its lock file
names the pid; a writer on another host cannot be checked: then only after `remote_idle_after_s`).
"""

from __future__ import annotations

import enum
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from explorer.runs import layout
from explorer.runs.reader import RunReader, Snapshot


class RunState(enum.Enum):
    WAITING = "waiting"  # no metrics yet
    LIVE = "live"  # being written
    FINISHED = "finished"  # its training ended and wrote a `finished` row
    STOPPED = "stopped"  # its writer went away without a `finished` row


@dataclass
class FollowUpdate:
    rows: list[dict] = field(default_factory=list)  # new rows, oldest first
    snapshots: list[Snapshot] = field(default_factory=list)  # every snapshot, when that changed
    snapshots_changed: bool = False
    state: RunState = RunState.WAITING
    reset: bool = False  # metrics.jsonl was replaced: `rows` are all of it, start over


class RunFollower:
    def __init__(self, folder: str | Path, min_interval_s: float = 0.1,
                 max_interval_s: float = 2.0, idle_after_s: float = 30.0,
                 remote_idle_after_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.reader = RunReader(folder)
        self.min_interval_s, self.max_interval_s = min_interval_s, max_interval_s
        self.idle_after_s, self.remote_idle_after_s = idle_after_s, remote_idle_after_s
        self.clock = clock
        self.interval_s = min_interval_s
        self.state = RunState.WAITING
        self._wake = threading.Event()
        self._metrics_stamp = None
        self._snapshots_stamp = None
        self._snapshot_steps: list[int] = []
        self._last_growth = clock()

    def notify(self) -> None:
        """Check now (a file watcher saw a change); safe from any thread."""
        self._wake.set()

    @staticmethod
    def _stamp(path: Path):
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def poll(self) -> FollowUpdate:
        """One check, without waiting: what grew since the last one, and the run's state."""
        reader, update = self.reader, FollowUpdate()
        metrics_stamp = self._stamp(reader.metrics_path)
        if metrics_stamp != self._metrics_stamp:
            self._metrics_stamp = metrics_stamp
            before = reader.rows
            update.rows = reader.read_new()
            update.reset = reader.rows is not before and bool(before)
            if update.reset:
                update.rows = list(reader.rows)
        snapshots_stamp = self._stamp(reader.folder / layout.SNAPSHOTS_DIR)
        if snapshots_stamp != self._snapshots_stamp:
            self._snapshots_stamp = snapshots_stamp
            update.snapshots = reader.snapshots()
            steps = [s.step for s in update.snapshots]
            update.snapshots_changed = steps != self._snapshot_steps
            self._snapshot_steps = steps
        now = self.clock()
        if update.rows or update.snapshots_changed:
            self._last_growth = now
            self.interval_s = self.min_interval_s
        else:
            self.interval_s = min(self.max_interval_s, 2 * self.interval_s)
        self.state = update.state = self._state(now)
        return update

    def _state(self, now: float) -> RunState:
        reader = self.reader
        if reader.finished is not None:
            return RunState.FINISHED
        idle = now - self._last_growth
        alive = layout.writer_alive(reader.folder)
        if alive is False and idle >= self.idle_after_s:
            return RunState.STOPPED
        if alive is None and idle >= self.remote_idle_after_s:
            return RunState.STOPPED
        return RunState.LIVE if reader.rows else RunState.WAITING

    def follow(self, stop: threading.Event | None = None,
               timeout_s: float | None = None) -> Iterator[FollowUpdate]:
        """Updates with something new in them, until the run finishes or stops, `stop` is set,
        or `timeout_s` passes. The last update always carries the final state."""
        deadline = None if timeout_s is None else self.clock() + timeout_s
        while True:
            update = self.poll()
            ended = update.state in (RunState.FINISHED, RunState.STOPPED)
            if update.rows or update.snapshots_changed or update.reset or ended:
                yield update
            if ended or (stop is not None and stop.is_set()):
                return
            wait = self.interval_s
            if deadline is not None:
                wait = min(wait, deadline - self.clock())
                if wait <= 0:
                    return
            if self._wake.wait(wait):
                self._wake.clear()
