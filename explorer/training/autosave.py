"""Checkpoints while a run trains: every N steps, and at SIGINT and SIGTERM (`explorer train
--save-every N`).

    with Autosave(trainer, out, every=100, save=writer.save_latest) as autosave:
        for event in trainer.run():
            ...
        writer.finish(workspace, finished)  # the final save, still under the folder's lock
    return autosave.exit_code  # 0, or 128 + the signal that stopped the run

`save(workspace, optimizer=state)` writes a checkpoint: in `explorer train` the run folder's
RunWriter.save_latest (which keeps the run's metrics.jsonl and snapshots; the RunWriter also
writes every step's metrics row as it comes), by default save_checkpoint to `out`. The folder is
locked for the whole run (the same FolderLock as the RunWriter's, taken re-entrantly), so a second
`explorer train` aimed at it stops at once with a one-line error. The periodic save runs inside
the trainer's generator (the engine's `on_step_end` hook, after the step's evaluation), in the
thread that trains: the weights are never read while they change. A signal only asks the trainer
to stop before its next step; the caller then saves as at the end. A second signal acts at once
(Ctrl-C twice aborts; the last complete checkpoint survives, since every save is crash-safe).
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from pathlib import Path

from explorer.durable import FolderLock
from explorer.errors import UserError

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


class Autosave:
    def __init__(self, trainer, out: str | Path, every: int | None = None,
                 threads: int | None = None, stream=None, save=None) -> None:
        if every is not None and (isinstance(every, bool) or not isinstance(every, int)
                                  or every < 1):
            raise UserError(f"--save-every must be a whole number of steps >= 1, got {every!r}")
        self.trainer, self.out, self.every = trainer, Path(out), every
        self.threads = threads  # the thread count the checkpoint records (see train.py)
        self.stream = stream or sys.stderr
        self.saved_step: int | None = None  # the step of the last checkpoint this run wrote
        self.signal: int | None = None  # the signal that stopped the run
        self._save = save or self._save_checkpoint
        self._lock = FolderLock(self.out)
        self._previous_handlers: dict[int, object] = {}

    # -- the run's lifetime ----------------------------------------------------------------------

    def __enter__(self) -> Autosave:
        from explorer.training.checkpoint import check_can_save

        check_can_save(self.out)  # before training, not after it
        self._lock.acquire()
        self.trainer.on_step_end = self._step_done
        if threading.current_thread() is threading.main_thread():  # only it may set handlers
            for number in SIGNALS:
                self._previous_handlers[number] = signal.signal(number, self._on_signal)
        return self

    def __exit__(self, *exc_info) -> None:
        self._restore_handlers()
        self.trainer.on_step_end = None
        self._lock.release()

    def _restore_handlers(self) -> None:
        for number, handler in self._previous_handlers.items():
            signal.signal(number, handler)
        self._previous_handlers.clear()

    def _on_signal(self, number: int, frame) -> None:
        self.signal = number
        self.trainer.control.stop()  # honoured before the next step; then the caller saves
        self._restore_handlers()  # a second Ctrl-C or SIGTERM acts at once

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal's number when one stopped the run."""
        return 0 if self.signal is None else 128 + self.signal

    def describe_stop(self) -> str:
        """`stopped by SIGTERM` for the final message, or '' when the run was not signalled."""
        return "" if self.signal is None else f"stopped by {signal.Signals(self.signal).name}"

    # -- saving ---------------------------------------------------------------------------------

    def _step_done(self, step: int) -> None:
        if self.every and step % self.every == 0 and step < (self.trainer.total_steps or 0):
            self.save()  # the last step is saved by the caller, with the run's final state

    def _save_checkpoint(self, workspace, optimizer) -> None:
        from explorer.training.checkpoint import save_checkpoint

        save_checkpoint(workspace, self.out, optimizer=optimizer)

    def save(self) -> None:
        """Write the trainer's current state to the folder; a failure (a full disk) is reported
        and training goes on: the previous checkpoint is intact and the next save may succeed."""
        trainer, workspace = self.trainer, self.trainer.workspace
        config = dataclasses.replace(trainer.config, num_threads=self.threads)
        saved_config, workspace.train_config = workspace.train_config, config
        try:
            self._save(workspace, optimizer=trainer.training_state())
            self.saved_step = workspace.step
        except UserError as exc:
            self.stream.write(f"\nwarning: {exc}\n")
            self.stream.flush()
        finally:
            workspace.train_config = saved_config

    def kept_note(self) -> str:
        """What is safe on disk, for a message about a run that failed."""
        if self.saved_step is None:
            return ""
        return f" The checkpoint of step {self.saved_step} in {self.out} is intact."
