"""TrainerControl: pause, resume, stop and single steps, from any thread, checked between steps."""

from __future__ import annotations

import threading
from typing import Any, Callable

# Options a running trainer picks up before its next step; the others wait for the next run.
LIVE_OPTIONS = ("lr", "clip", "label_smoothing", "eval_every", "probe_every_s", "steps")


class TrainerControl:
    """Thread-safe switches for a Trainer, built on threading.Event.

    The trainer calls `wait_for_turn()` before every step. While paused it blocks on an event (with
    a timeout, so it never busy-spins and still notices `stop()`); `step_once()` lets exactly one
    step through and stays paused.
    """

    def __init__(self, poll_s: float = 0.25) -> None:
        self.poll_s = poll_s
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._running.set()
        self._stopped = threading.Event()
        self._wake = threading.Event()  # set by every command, so a paused trainer reacts at once
        self._single_steps = 0
        self._changes: dict[str, Any] = {}
        # called in the trainer's thread when a pause starts to hold it (the app autosaves there)
        self.on_pause: Callable[[], None] | None = None

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        with self._lock:
            self._running.set()
            self._wake.set()

    def stop(self) -> None:
        with self._lock:
            self._stopped.set()
            self._wake.set()

    def step_once(self) -> None:
        """Run one more step, then stay (or become) paused."""
        with self._lock:
            self._running.clear()
            self._single_steps += 1
            self._wake.set()

    def update(self, **changes: Any) -> None:
        """Change TrainConfig fields of a running trainer (LIVE_OPTIONS) before its next step."""
        with self._lock:
            self._changes.update(changes)

    def take_changes(self) -> dict[str, Any]:
        with self._lock:
            changes, self._changes = self._changes, {}
        return changes

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def wait_for_turn(self) -> bool:
        """Block until the next step may run; False means stop."""
        pausing = True
        while True:
            with self._lock:
                if self._stopped.is_set():
                    return False
                if self._running.is_set():
                    return True
                if self._single_steps:
                    self._single_steps -= 1
                    return True
                self._wake.clear()  # under the lock: a command issued after this sets it again
            if pausing and self.on_pause is not None:
                self.on_pause()
            pausing = False
            self._wake.wait(self.poll_s)
