"""The app's own run folders: every training in the window is a run (explorer.runs), recorded
under the user's data folder, which the window chooses (explorer/ui/app_runs.py).

    ROOT/20261123-184512-seq2seq/        a run folder, exactly as `explorer train --out` writes it
    ROOT/.20261123-184512-seq2seq.lock   its FolderLock, held while the app has the run open
    RUN/.app-closed       the app let go of the run cleanly (closed, or went on to another model)
    RUN/.app-discarded    after a crash the user chose Discard: it is never offered again
    RUN/.keep             kept for good: never pruned

A run that no live process holds, with neither marker and with a saved checkpoint, was cut short
(a crash, a kill, a power cut): `interrupted_runs` finds it for the recovery dialog.

`RunRecorder` writes one training segment (from Train to the trainer's stop) in the thread that
trains, so no tensor crosses threads: the RunWriter's rows and snapshots, and a resume-able
checkpoint every `autosave_s` seconds at a step boundary (and at a pause, when the last save is
older than PAUSE_SAVE_AFTER_S). A failure to write (a full disk) is one
notice; training goes on and what was saved before stays intact.
Qt-free and standard library only, apart from the RunWriter it drives.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from explorer.durable import FolderLock
from explorer.errors import UserError, first_line, read_json_object
from explorer.runs import layout

CLOSED = ".app-closed"
DISCARDED = ".app-discarded"
KEEP = ".keep"
DEFAULT_KEEP_RUNS = 5
# a pause that follows this long after the last save saves too: a paused run may sit for hours
PAUSE_SAVE_AFTER_S = 30.0


# -- folders and markers ---------------------------------------------------------------------------


def new_run_folder(root: str | Path, family: str, now: float | None = None) -> Path:
    """ROOT/<local time>-<family>, not yet created; `-2`, `-3`... when that name is taken."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    base = Path(root) / f"{stamp}-{family}"
    folder, number = base, 1
    while folder.exists() or FolderLock(folder).path.exists():
        number += 1
        folder = base.with_name(f"{base.name}-{number}")
    return folder


def mark(folder: str | Path, marker: str) -> None:
    """Leave `marker` (CLOSED, DISCARDED or KEEP) in the run folder; a run already gone is fine."""
    try:
        (Path(folder) / marker).write_text(time.strftime("%Y-%m-%d %H:%M:%S\n"), encoding="utf-8")
    except FileNotFoundError:
        pass


def run_folders(root: str | Path) -> list[Path]:
    """The run folders under ROOT, newest first (by name: they start with their start time)."""
    try:
        entries = [e for e in os.scandir(root) if e.is_dir() and not e.name.startswith(".")]
    except FileNotFoundError:
        return []
    return sorted((Path(e.path) for e in entries), key=lambda p: p.name, reverse=True)


# -- runs cut short --------------------------------------------------------------------------------


@dataclass(frozen=True)
class InterruptedRun:
    folder: Path
    model: str  # "seq2seq on reverse", for the dialog
    saved_step: int  # the step of its last saved checkpoint: Reopen continues from here
    last_step: int  # the last step it recorded in metrics.jsonl (>= saved_step)
    saved_at: float  # when that checkpoint was written (time.time())


def interrupted_runs(root: str | Path) -> list[InterruptedRun]:
    """Runs under ROOT that stopped without the app letting go of them, newest first: no marker,
    no live process holding their lock, and a checkpoint to reopen."""
    found = []
    for folder in run_folders(root):
        if (folder / CLOSED).exists() or (folder / DISCARDED).exists():
            continue
        config_path = folder / layout.CONFIG_FILE
        config = read_json_object(config_path)
        if config is None or "model" not in config:
            continue  # nothing saved yet: nothing to reopen
        if layout.writer_alive(folder) is not False:
            continue  # a live process (this one too) is writing it, or one on another host
        saved_step = int(config.get("step") or 0)
        found.append(InterruptedRun(
            folder=folder, model=_model_label(config), saved_step=saved_step,
            last_step=max(saved_step, _last_step(folder / layout.METRICS_FILE)),
            saved_at=config_path.stat().st_mtime))
    return found


def _model_label(config: dict) -> str:
    model = config.get("model") or {}
    family = model.get("family", "a model")
    data = config.get("data") or {}
    source = config.get("task") or data.get("task") or next(
        (Path(data[key]).name for key in ("text", "tsv", "src") if data.get(key)), None)
    return f"{family} on {source}" if source else str(family)


def _last_step(metrics: Path) -> int:
    """The step of the last complete row of metrics.jsonl, reading only its tail."""
    try:
        with open(metrics, "rb") as file:
            file.seek(0, os.SEEK_END)
            size = file.tell()
            file.seek(max(0, size - 65536))
            tail = file.read()
    except OSError:
        return 0
    for line in reversed(tail[:tail.rfind(b"\n") + 1].splitlines()):
        try:
            step = json.loads(line).get("step")
        except (ValueError, AttributeError):
            continue
        if isinstance(step, int):
            return step
    return 0


# -- keeping the last few --------------------------------------------------------------------------


def prune_runs(root: str | Path, keep: int = DEFAULT_KEEP_RUNS,
               in_use: tuple[Path, ...] = ()) -> list[Path]:
    """Delete all but the newest `keep` runs under ROOT; returns what was removed (a folder that
    could not be removed is not reported). Never one in `in_use`, one marked KEEP, one a live
    process holds (its lock is tried, not trusted), one cut short that the user has not answered
    for yet, nor a symlink (a "run" that lives elsewhere: nothing outside ROOT is touched)."""
    in_use_names = {Path(p).name for p in in_use}
    interrupted = {run.folder.name for run in interrupted_runs(root)}
    deleted = []
    for folder in run_folders(root)[keep:]:
        if (folder.name in in_use_names or folder.name in interrupted or folder.is_symlink()
                or (folder / KEEP).exists()):
            continue
        lock = FolderLock(folder)
        if _held_by_this_process(lock):
            continue
        try:
            lock.acquire()
        except UserError:
            continue  # another explorer process writes it
        try:
            shutil.rmtree(folder, ignore_errors=True)
            if not os.path.lexists(folder):  # what it could not remove stays, unreported
                deleted.append(folder)
        finally:
            lock.release()
    return deleted


def _held_by_this_process(lock: FolderLock) -> bool:
    """FolderLock is re-entrant within a process: acquiring one this process holds succeeds."""
    from explorer import durable

    return lock._key() in durable._held


# -- writing one training segment ------------------------------------------------------------------


class RunRecorder:
    """One training segment into `folder`, called from the thread that trains:

        recorder.start(trainer)     # claim the folder, config.json, the starting checkpoint
        recorder.record(event)      # every event of trainer.run()
        recorder.finish(finished)   # the last checkpoint and the `finished` row; releases

    `first`: the run's first segment (a new folder); later ones append to it as a resume does.
    `notice(message)` gets one line per failure; `autosave_s` may be changed while training."""

    def __init__(self, folder: str | Path, first: bool, notice: Callable[[str], None],
                 autosave_s: float = 0.0, snapshot_every: int | None = None,
                 resumed_from: str | None = None, prune: Callable[[], None] | None = None,
                 tensorboard: bool = False) -> None:
        self.folder = Path(folder)
        self.first = first
        self.notice = notice
        self.autosave_s = autosave_s
        self.snapshot_every = snapshot_every  # 0: none, even for a run that had a cadence
        self.resumed_from = resumed_from
        self.prune = prune
        # TensorBoard scalars cost ~1 ms a step: 5% of a tiny model's training, and the app draws
        # its own curves. Off unless asked for (and installed).
        self.tensorboard = tensorboard and importlib.util.find_spec("tensorboard") is not None
        self.writer = None
        self.trainer = None
        self.saved_step: int | None = None  # the step of the last checkpoint this segment wrote
        self.autosaves = 0
        self._last_save = time.monotonic()
        self._failed_autosave = False

    def start(self, trainer) -> None:
        from explorer.runs.writer import RunWriter

        self.trainer = trainer
        if self.prune is not None:
            try:
                self.prune()
            except OSError:
                pass  # an old run that cannot be deleted now: the next run tries again
        writer = RunWriter(self.folder, self.snapshot_every, tensorboard=self.tensorboard,
                           stream=_Notices(self.notice))
        try:
            writer.claim(resume=not self.first)
            writer.start(trainer.workspace, trainer, resumed_from=self.resumed_from)
        except (UserError, OSError) as exc:
            writer.close()
            self._give_up("cannot record this training", exc)
            return
        self.writer = writer
        self.saved_step = trainer.workspace.step
        self._last_save = time.monotonic()
        trainer.on_step_end = self._step_done
        trainer.control.on_pause = self._pausing

    def record(self, event) -> None:
        if self.writer is None:
            return
        try:
            self.writer.record(event)
        except (UserError, OSError) as exc:
            self._give_up("stopped recording this training", exc)

    def _step_done(self, step: int) -> None:
        if self.autosave_s and time.monotonic() - self._last_save >= self.autosave_s:
            self.autosave()

    def _pausing(self) -> None:
        """A pause starts to hold the trainer (between two steps): a run may sit paused for
        hours, so what it trained since the last save is saved now."""
        if (self.autosave_s and self.trainer is not None
                and self.saved_step != self.trainer.workspace.step
                and time.monotonic() - self._last_save >= PAUSE_SAVE_AFTER_S):
            self.autosave()

    def autosave(self) -> bool:
        """The trainer's state (weights, optimizer, step) as the run's latest checkpoint, crash-
        safe; False (and one notice per segment) when it could not be written."""
        if self.writer is None:
            return False
        trainer = self.trainer
        self._last_save = time.monotonic()
        try:
            self.writer.save_latest(trainer.workspace, trainer.config,
                                    optimizer=trainer.training_state())
        except (UserError, OSError) as exc:
            if not self._failed_autosave:
                self._failed_autosave = True
                kept = (f" the checkpoint of step {self.saved_step} is intact"
                        if self.saved_step is not None else "")
                self.notice(f"autosave failed: {first_line(exc)};{kept} training goes on")
            return False
        self.saved_step = trainer.workspace.step
        self.autosaves += 1
        return True

    def finish(self, finished) -> None:
        """After the trainer's last event: the final checkpoint (unless the loss diverged or
        memory ran out: the last autosave stays the run's checkpoint) and the `finished` row."""
        if self.writer is None:
            return
        try:
            if finished.reason in ("nan", "oom"):
                self.writer.end(finished.reason, finished.message, finished.step)
            else:
                self.writer.finish(self.trainer.workspace, finished)
                self.saved_step = self.trainer.workspace.step
        except (UserError, OSError) as exc:
            self._give_up("could not save the end of this training", exc)
            return
        self.close()

    def close(self, error: BaseException | None = None) -> None:
        """Release the folder (`error`: the exception that ended training, recorded as such)."""
        if self.trainer is not None and self.trainer.on_step_end == self._step_done:
            self.trainer.on_step_end = None
            self.trainer.control.on_pause = None
        # the autosave settings keep the last segment's recorder: not its trainer (the model,
        # the data feed and the batches) once the segment has ended
        self.trainer = None
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close(error)
            except OSError:
                pass  # the disk that failed the rows fails the last one too: the lock is freed

    def _give_up(self, what: str, exc: BaseException) -> None:
        self.close()
        self.notice(f"{self.folder}: {what} ({first_line(exc)}); training goes on")


class _Notices:
    """The stream a RunWriter warns on (a snapshot that failed): each warning becomes a notice."""

    def __init__(self, notice: Callable[[str], None]) -> None:
        self.notice = notice

    def write(self, text: str) -> None:
        for line in text.splitlines():
            if line.startswith("warning: "):
                self.notice(line[len("warning: "):])

    def flush(self) -> None:
        pass



