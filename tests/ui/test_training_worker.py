"""Training off the GUI thread: throttled batches, pause / step / resume, live changes, errors and
closing or replacing the model mid-training."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QObject, QThread, Slot

from explorer.events import StepMetrics, TrainingFinished
from explorer.ui.training_worker import MAX_EMITS_PER_S, TrainingWorker, WorkerThread



class FastTrainer:
    """A trainer whose steps take ~50 µs: far more events than the GUI may receive."""

    threads_note = None

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.thread = None

    def run(self):
        self.thread = QThread.currentThread()
        for step in range(1, self.steps + 1):
            deadline = time.perf_counter() + 5e-5
            while time.perf_counter() < deadline:
                pass
            yield StepMetrics(step, 1.0 / step, 1e-3, 2.0, 1.0, 10, 1e5, step * 5e-5, self.steps)
        yield TrainingFinished(self.steps, "done")


class Receiver(QObject):
    """Lives in the GUI thread, so queued batches arrive here as the panels would get them."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[int] = []
        self.arrivals: list[float] = []
        self.threads: set = set()

    @Slot(object)
    def on_batch(self, batch) -> None:
        self.arrivals.append(time.perf_counter())
        self.threads.add(QThread.currentThread())
        self.steps.extend(s.step for s in batch.steps)


class NullControl:
    def stop(self) -> None:
        pass


def test_worker_batches_every_step_into_at_most_30_emits_per_second(qtbot):
    trainer = FastTrainer(steps=20_000)
    worker = TrainingWorker(trainer, NullControl())
    receiver = Receiver()
    worker.batch.connect(receiver.on_batch)
    finished = []
    worker.finished.connect(finished.append)
    thread = WorkerThread(worker, [worker.finished])
    started = time.perf_counter()
    with qtbot.waitSignal(thread.ended, timeout=60_000):
        thread.start()
    elapsed = time.perf_counter() - started
    assert thread.wait(300_000)  # ended: it returns at once; generous on a busy machine
    qtbot.waitUntil(lambda: len(receiver.steps) == 20_000)  # the last queued batch
    assert trainer.thread is not QThread.currentThread()  # trained off the GUI thread
    assert receiver.threads == {QThread.currentThread()}  # and delivered on it
    assert finished[0].reason == "done"
    assert receiver.steps == list(range(1, 20_001))  # nothing lost, nothing reordered
    assert len(receiver.arrivals) <= MAX_EMITS_PER_S * elapsed + 2
    assert len(receiver.arrivals) >= 2  # but it did stream, not one lump at the end


def test_pause_step_resume_and_stop_with_the_real_trainer(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    controller = window.controller
    controller.set_workspace(tiny_workspace)
    steps: list[StepMetrics] = []
    window.bus.step_metrics.connect(steps.extend)

    controller.train(steps=10_000, paused=True)
    assert controller.state == "paused"
    for expected in (1, 2):
        with qtbot.waitSignal(window.bus.step_metrics, timeout=20_000):
            controller.step_once()
        assert [s.step for s in steps] == list(range(1, expected + 1))  # exactly one step each
    assert window.actions.pause.isChecked()

    window.actions.pause.setChecked(False)  # the toolbar's resume
    assert controller.state == "running"
    qtbot.waitUntil(lambda: len(steps) >= 6, timeout=20_000)
    controller.pause()
    with qtbot.waitSignal(controller.training_finished, timeout=20_000) as blocker:
        window.actions.stop.trigger()
    assert blocker.args[0].reason == "stopped"
    curves = window.panels["curves"]
    last = tiny_workspace.step
    assert [s.step for s in steps] == list(range(1, last + 1))
    assert curves.train.view()[:, 1].tolist() == [row["loss"] for row in tiny_workspace.history]
    # and the curve on screen grew to every step
    drawn = curves.curves["train_loss"]
    qtbot.waitUntil(lambda: drawn.xData is not None and len(drawn.xData) == last)
    # the status bar follows a few times a second and ends on the last step
    qtbot.waitUntil(lambda: window.status.step_label.text() == f"step: {last}")


def test_learning_rate_change_reaches_the_running_trainer(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    controller = window.controller
    controller.set_workspace(tiny_workspace)
    controller.train(steps=100, paused=True)
    with qtbot.waitSignal(window.bus.step_metrics, timeout=20_000) as first:
        controller.step_once()
    assert first.args[0][-1].lr == pytest.approx(3e-3)
    window.controls.lr.setValue(0.0125)
    window.controls.lr.editingFinished.emit()
    with qtbot.waitSignal(window.bus.step_metrics, timeout=20_000) as second:
        controller.step_once()
    assert second.args[0][-1].lr == pytest.approx(0.0125)  # constant schedule: exactly the new lr
    controller.stop_training()


def test_an_error_in_the_worker_shows_a_dialog_and_keeps_the_trained_steps(
    make_main_window, qtbot, tiny_workspace, monkeypatch
):
    from explorer.training.engine import Trainer

    original = Trainer._step

    def failing_step(self, step, params, last_good):
        if step == 4:
            raise RuntimeError("simulated failure\nwith a second line")
        return original(self, step, params, last_good)

    monkeypatch.setattr(Trainer, "_step", failing_step)
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    # `training_finished` is queued after every batch the worker sent, so once it arrives the
    # curves have had all of them (the thread itself may end before the GUI thread drains its queue)
    errors = []
    window.error_shown.connect(errors.append)
    with qtbot.waitSignal(window.controller.training_finished, timeout=20_000) as finished:
        window.controller.train(steps=10)
    assert errors == ["RuntimeError: simulated failure"]  # one line
    assert finished.args[0].reason == "error"
    assert not window.controller.is_training()
    assert tiny_workspace.step == 3 and len(tiny_workspace.history) == 3
    assert window.panels["curves"].train.size == 3

    monkeypatch.setattr(Trainer, "_step", original)  # the app keeps working
    window.error_boxes[-1].accept()
    with qtbot.waitSignal(window.controller.training_finished, timeout=20_000) as done:
        window.controller.train(steps=2)
    assert done.args[0].reason == "done" and tiny_workspace.step == 5


def test_closing_the_window_mid_training_ends_cleanly(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    window.show()
    window.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(window.bus.step_metrics, timeout=20_000):
        window.controller.train(steps=100_000)
    thread = window.controller.training.thread
    started = time.perf_counter()
    window.close()
    assert time.perf_counter() - started < 60  # not the 100,000 steps: closing stops them
    assert thread.isFinished()
    assert window.controller.training is None
    assert tiny_workspace.history and tiny_workspace.step == tiny_workspace.history[-1]["step"]


def test_opening_another_model_mid_training_stops_the_first(make_main_window, qtbot, tiny_workspace,
                                                            tiny_task_spec):
    from explorer.training.setup import build_workspace

    other = build_workspace(tiny_task_spec, "transformer", preset="tiny")
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(window.bus.step_metrics, timeout=20_000):
        window.controller.train(steps=100_000)
    first_thread = window.controller.training.thread
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=20_000):
        window.controller.set_workspace(other)
    assert first_thread.isFinished() and window.controller.state != "running"
    assert window.panels["curves"].train.size == 0  # the new model's (empty) history
    with qtbot.waitSignal(window.controller.training_finished, timeout=30_000):
        window.controller.train(steps=2)
    assert other.step == 2
