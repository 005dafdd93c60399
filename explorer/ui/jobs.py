"""The one way to run work off the GUI thread: a latest-wins job runner.

A job is a plain function of plain arguments (a workspace, strings, numbers) returning plain data
(dataclasses of numpy arrays, floats and strings); tensors stay in the runner's thread. A job that
returns a generator works in stages: each value it yields is delivered at once (`partial`), so a
window can draw what is ready, and its return value is the result; a newer job stops it between
stages. Each
`JobRunner` owns one QThread, started on the first job, and runs one job at a time. When jobs pile
up faster than they run (a spin box being dragged, a probe input typed), a job that a newer one has
superseded is skipped before it starts, and only the newest job's result or error is delivered.

Errors arrive the same way from every runner: `failed(job_id, message)` with one line (a
`UserError` as it is, anything else with its type), never a traceback. `shutdown()` drops what is
queued, lets the running job finish and joins the runner's own thread; it never waits on Qt's
global thread pool. A runner's thread also stops when the runner is destroyed or the application
quits. Training keeps its own long-lived worker (explorer/ui/training_worker.py); the controller
stops both kinds in `Controller.shutdown()`, panels their runners in `Panel.shutdown()`.
"""

from __future__ import annotations

import atexit
import threading
import types
import weakref
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from explorer.errors import SettingsError, UserError, first_line

_LIVE: weakref.WeakSet = weakref.WeakSet()  # every runner not yet deleted, for the exit hook
_SUPERSEDED = object()  # a staged job stopped by a newer one: no answer


def one_line(exc: BaseException) -> str:
    """A message fit for a dialog or a status line: user errors as they are, anything else with
    its type."""
    text = first_line(exc, default="")
    if isinstance(exc, SettingsError):  # the app's own fields, not the CLI's flags
        from explorer.ui.training_controls import settings_advice

        return settings_advice(exc)
    if isinstance(exc, UserError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _Executor(QObject):
    """Lives in the runner's thread; `run` is invoked through a queued signal."""

    done = Signal(int, object)
    partial = Signal(int, object)
    failed = Signal(int, str)

    def __init__(self, latest: Callable[[], int]) -> None:
        super().__init__()
        self._latest = latest

    @Slot(int, object)
    def run(self, job_id: int, job: object) -> None:
        fn, args, kwargs = job
        if job_id < 0:  # a barrier (wait_idle): no answer
            fn(*args, **kwargs)
            return
        if job_id < self._latest():
            return  # superseded while it waited in the queue
        try:
            result = fn(*args, **kwargs)
            if isinstance(result, types.GeneratorType):
                result = self._stages(job_id, result)
        except Exception as exc:  # noqa: BLE001 - every failure reaches the user as one line
            self.failed.emit(job_id, one_line(exc))
            return
        if result is not _SUPERSEDED:
            self.done.emit(job_id, result)

    def _stages(self, job_id: int, stages: types.GeneratorType):
        """Deliver each value a staged job yields as it comes; its return value, or _SUPERSEDED
        when a newer job came meanwhile (the rest is not computed: the generator is closed)."""
        while True:
            try:
                value = next(stages)
            except StopIteration as finished:
                return finished.value
            if job_id < self._latest():
                stages.close()
                return _SUPERSEDED
            self.partial.emit(job_id, value)


class JobRunner(QObject):
    """`submit(fn, *args, **kwargs)` runs `fn` in the runner's thread and returns a job id;
    `done(job_id, result)` or `failed(job_id, message)` arrive on the GUI thread for the newest
    job only, after its `partial(job_id, value)`s if it is staged (returns a generator). `busy` is
    True from a submit until the newest job's answer has been delivered."""

    done = Signal(int, object)
    partial = Signal(int, object)
    failed = Signal(int, str)
    busy_changed = Signal(bool)
    _request = Signal(int, object)

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self._lock = threading.Lock()
        self._latest_id = 0
        self._busy = False
        self._closed = False
        self.thread = QThread()
        self.thread.setObjectName(f"{name}-jobs")
        self._executor = _Executor(self._latest)
        self._executor.moveToThread(self.thread)
        self._request.connect(self._executor.run)
        self._executor.done.connect(self._on_done)
        self._executor.partial.connect(self._on_partial)
        self._executor.failed.connect(self._on_failed)
        # whoever deletes the runner, its thread is joined first ("destroyed while running" aborts)
        thread = self.thread
        self.destroyed.connect(lambda *_: _join(thread))
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        _LIVE.add(self)

    def _latest(self) -> int:
        with self._lock:
            return self._latest_id

    @property
    def busy(self) -> bool:
        return self._busy

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
        """Queue `fn(*args, **kwargs)`, superseding every job not yet delivered; -1 once shut
        down."""
        if self._closed:
            return -1
        if not self.thread.isRunning():
            self.thread.start()
        with self._lock:
            self._latest_id += 1
            job_id = self._latest_id
        self._set_busy(True)
        self._request.emit(job_id, (fn, args, kwargs))
        return job_id

    def cancel(self) -> None:
        """Forget every job: queued ones are skipped, the running one's answer is dropped."""
        with self._lock:
            self._latest_id += 1
        self._set_busy(False)

    def wait_idle(self, timeout_ms: int = 30_000) -> None:
        """Block until the job running now (if any) has returned; its answer is still delivered
        later through the event loop. For callers about to hand the model to another thread."""
        if not self.thread.isRunning():
            return
        idle = threading.Event()
        # queued behind whatever runs now: when it runs, everything before it has returned
        self._request.emit(-1, (idle.set, (), {}))
        idle.wait(timeout_ms / 1000)

    def shutdown(self) -> None:
        """Drop queued jobs, let the running one finish, and join the thread (idempotent)."""
        self._closed = True
        self.cancel()
        _join(self.thread)

    @Slot(int, object)
    def _on_done(self, job_id: int, result: object) -> None:
        if job_id == self._latest():
            self._set_busy(False)
            self.done.emit(job_id, result)

    @Slot(int, object)
    def _on_partial(self, job_id: int, value: object) -> None:
        if job_id == self._latest():
            self.partial.emit(job_id, value)

    @Slot(int, str)
    def _on_failed(self, job_id: int, message: str) -> None:
        if job_id == self._latest():
            self._set_busy(False)
            self.failed.emit(job_id, message)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busy_changed.emit(busy)


def _join(thread: QThread) -> None:
    try:
        if thread.isRunning():
            thread.quit()
            thread.wait()
    except RuntimeError:  # the C++ object is already gone
        pass


@atexit.register
def _shutdown_live_runners() -> None:
    """A runner nobody shut down (a script's, a test's) still ends its thread before Python
    finalises Qt's objects, which would otherwise abort on a running QThread."""
    for runner in list(_LIVE):
        try:
            runner.shutdown()
        except RuntimeError:  # its C++ object is already gone (and its thread joined then)
            pass


def shutdown_runners(root: QObject) -> None:
    """Shut down every JobRunner among `root`'s descendants (a panel's, the window's)."""
    for runner in root.findChildren(JobRunner):
        runner.shutdown()
