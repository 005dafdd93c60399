"""The training worker: a Trainer run off the GUI thread for as long as training goes on.

(Shorter work, from loading a checkpoint to a probe or a decode, goes through explorer/ui/jobs.py.)

A worker is a QObject moved to a QThread. It never touches widgets; it sends plain data
(explorer.events) in `WorkerBatch`es, at most `max_emits_per_s` a second, so the GUI thread
redraws at a steady rate however fast the model trains. Stopping goes through the trainer's
thread-safe `TrainerControl` (checked before every step) and `QThread.requestInterruption`,
because a queued "stop" call would only arrive after the busy loop returned.

With a `recorder` (explorer.runs.app_runs.RunRecorder) the worker also writes the run folder and
its autosaves, here in the thread that trains: the model is never read while it changes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from explorer.events import EvalMetrics, ProbeSnapshot, StepMetrics, TrainingFinished
from explorer.ui.jobs import one_line

# Each batch wakes the GUI thread, which then takes the GIL from the training thread for its
# slots: at 30 batches a second in-app training ran at 0.83 of headless, at 10 at 0.90 (medians of
# 15 and 18 paired rounds, benchmarks/RESULTS.md). The curves redraw every 300 ms or more, so 4
# a second draws the same frames with fewer wakes (issue 37: the GUI thread's share).
MAX_EMITS_PER_S = 4


@dataclass
class WorkerBatch:
    """Everything that happened since the last emit, oldest first."""

    steps: list = field(default_factory=list)  # StepMetrics
    evals: list = field(default_factory=list)  # EvalMetrics
    probe: ProbeSnapshot | None = None  # only the newest one matters

    def __bool__(self) -> bool:
        return bool(self.steps or self.evals or self.probe)


class TrainingWorker(QObject):
    batch = Signal(object)  # WorkerBatch
    finished = Signal(object)  # TrainingFinished, always the last signal
    failed = Signal(str)  # a one-line message; `finished` follows with reason "error"
    notice = Signal(str)  # one line (an autosave that failed, fewer threads); training goes on

    def __init__(self, trainer, control, max_emits_per_s: float = MAX_EMITS_PER_S,
                 recorder=None) -> None:
        super().__init__()
        self.trainer = trainer
        self.control = control
        self.recorder = recorder
        self.min_interval_s = 1.0 / max_emits_per_s
        self.emits = 0  # batches sent, for tests and the benchmark

    @Slot()
    def run(self) -> None:
        pending = WorkerBatch()
        last_emit = 0.0
        finished = None
        thread = QThread.currentThread()
        recorder = self.recorder
        error = None
        try:
            if recorder is not None:
                recorder.notice = self.notice.emit
                recorder.start(self.trainer)
            for event in self.trainer.run():
                if self.trainer.threads_note:  # fewer CPU threads on a busy machine: say why
                    self.notice.emit(self.trainer.threads_note)
                    self.trainer.threads_note = None
                if recorder is not None:
                    recorder.record(event)
                if thread.isInterruptionRequested():
                    self.control.stop()
                if isinstance(event, StepMetrics):
                    pending.steps.append(event)
                elif isinstance(event, EvalMetrics):
                    pending.evals.append(event)
                elif isinstance(event, ProbeSnapshot):
                    pending.probe = event
                elif isinstance(event, TrainingFinished):
                    finished = event
                now = time.perf_counter()
                # paused: the trainer will block before its next event, so nothing may wait here
                paused = getattr(self.control, "paused", False)
                if pending and (paused or now - last_emit >= self.min_interval_s):
                    self._emit(pending)
                    pending, last_emit = WorkerBatch(), now
        except Exception as exc:  # noqa: BLE001 - any failure must reach the user as a dialog
            error = exc
            self.failed.emit(one_line(exc))
            finished = TrainingFinished(_last_step(pending), "error", one_line(exc))
        if recorder is not None:
            if error is None and finished is not None:
                recorder.finish(finished)
            recorder.close(error)
        if pending:
            self._emit(pending)
        if finished is None:
            finished = TrainingFinished(step=_last_step(pending), reason="stopped")
        self.finished.emit(finished)

    def _emit(self, pending: WorkerBatch) -> None:
        self.emits += 1
        self.batch.emit(pending)


def _last_step(pending: WorkerBatch) -> int:
    return pending.steps[-1].step if pending.steps else -1


class WorkerThread(QObject):
    """A worker and its QThread, wired so the thread quits when the worker is done.

    `stop()` asks politely (control flag + interruption) and `wait()` blocks until the thread
    ended, so no "QThread: Destroyed while thread is still running" can happen.
    """

    ended = Signal()

    def __init__(self, worker: QObject, done_signals, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker
        self.thread = QThread()
        self.thread.setObjectName(type(worker).__name__)
        worker.moveToThread(self.thread)
        self.thread.started.connect(worker.run)
        for signal in done_signals:
            # direct: the worker's own thread quits its loop, even while the GUI thread is blocked
            # in wait() and could not deliver a queued call
            signal.connect(self.thread.quit, Qt.ConnectionType.DirectConnection)
        self.thread.finished.connect(self.ended)

    def start(self) -> None:
        self.thread.start()

    def is_running(self) -> bool:
        return self.thread.isRunning()

    def stop(self, control=None) -> None:
        if control is not None:
            control.stop()
        self.thread.requestInterruption()
        self.thread.quit()

    def wait(self, timeout_ms: int = 30_000) -> bool:
        return self.thread.wait(timeout_ms)
