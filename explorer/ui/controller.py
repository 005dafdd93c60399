"""The glue between a workspace, the worker threads and the AppBus.

The controller sets the app state (explorer/state.py, held by the bus: the workspace, the training
state, the probe input) and owns at most one training thread, the job runner for loading,
building and evaluating workspaces, and the Prober (explorer/ui/probing.py). While
training runs the model belongs to the worker thread: the GUI thread only sees the plain-data
events the worker sends (at most 4 batches a second) and re-emits them on the bus for the panels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Signal

from explorer.ui.bus import AppBus
from explorer.ui.jobs import JobRunner, one_line
from explorer.ui.probing import Prober
from explorer.ui.training_worker import TrainingWorker, WorkerThread


def _core():
    """The training engine, imported on first use so the window paints before torch loads."""
    from types import SimpleNamespace

    from explorer.training.checkpoint import history_cut, load_checkpoint, save_checkpoint
    from explorer.training.config import TrainConfig
    from explorer.training.control import LIVE_OPTIONS, TrainerControl
    from explorer.training.engine import Trainer
    from explorer.training.evaluation import evaluate

    return SimpleNamespace(
        Trainer=Trainer, TrainerControl=TrainerControl, TrainConfig=TrainConfig,
        LIVE_OPTIONS=LIVE_OPTIONS, evaluate=evaluate, load_checkpoint=load_checkpoint,
        history_cut=history_cut,
        save_checkpoint=save_checkpoint,
    )


PROBE_EVERY_S = 1.0


class Controller(QObject):
    error = Signal(str)  # one line, shown as a dialog by the main window
    stats = Signal(object)  # the newest StepMetrics, for the status bar
    busy = Signal(str)  # "" when idle, else what runs in the background
    device_changed = Signal(str)  # where the model trains, e.g. "cpu" or "cuda:0"
    training_finished = Signal(object)  # explorer.events.TrainingFinished
    # (workspace, explorer.usermodel.check.Report) of File ▸ Open model code…, before it opens
    model_checked = Signal(object, object)

    def __init__(self, bus: AppBus, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bus = bus
        self.app_state = bus.state
        self.train_config = None
        self.control = None
        self.training: WorkerThread | None = None
        self.jobs = JobRunner("workspace", self)  # loading, building, evaluating: newest wins
        self.jobs.done.connect(self._on_job_done)
        self.jobs.failed.connect(lambda _job, message: self.error.emit(message))
        self.jobs.busy_changed.connect(self._on_jobs_busy)
        self._on_done = {}  # job id -> what to call with its result
        self.finished_runs = 0
        self.prober = Prober(bus, self)  # what is probed, by the trainer or between runs
        self._resume_steps: int | None = None
        self.runs = None  # explorer.ui.autosave.RunKeeper: the window's run folders, if any

    @property
    def workspace(self):
        return self.app_state.workspace

    @property
    def state(self) -> str:
        """The training state's status: explorer.state.TRAINING_STATES."""
        return self.app_state.training.status

    @property
    def run_folder(self) -> Path | None:
        """The run folder the current workspace's training writes (bus.run_folder_changed)."""
        return None if self.runs is None else self.runs.folder

    # -- workspace -------------------------------------------------------------------------------

    def set_workspace(self, workspace, keep_probe: bool = False) -> None:
        """`keep_probe`: the same input is probed on it (another snapshot of the same run)."""
        self.stop_training()
        self.train_config = getattr(workspace, "train_config", None) or _core().TrainConfig()
        self.app_state.set_workspace(workspace, keep_probe)
        self.bus.train_config_changed.emit(self.train_config)
        self.app_state.set_training("idle", target_steps=None)
        if workspace is not None:
            self.run_job(first_look, workspace, on_done=self._on_first_look, label="evaluating")

    def open_checkpoint(self, folder: str | Path) -> None:
        """Load a checkpoint directory in a worker; the current training (if any) stops first."""
        self.stop_training()
        self.run_job(_load_checkpoint, str(folder), on_done=lambda workspace: self._opened(
            workspace, folder), label="loading")

    def open_model_code(self, build: str, weights: str | None = None,
                        tokenizer: str | None = None) -> None:
        """The user's own model from `FILE.py:function` (imported in a worker and checked by one
        probe forward; any failure is one line in the error dialog, and the current model stays)."""
        from explorer.usermodel.check import open_checked

        self.stop_training()
        self.run_job(open_checked, build, weights, tokenizer, on_done=self.set_workspace,
                     label="opening your model")

    def check_model_code(self, build: str, weights: str | None = None,
                         tokenizer: str | None = None) -> None:
        """File ▸ Open model code…: open and check the model in a worker, then `model_checked`
        with the workspace and `explorer check`'s report; the window switches to it only when the
        user accepts the report (`set_workspace`). A failure is one line; the current model stays."""
        self.run_job(_open_and_check, build, weights, tokenizer,
                     on_done=lambda result: self.model_checked.emit(*result),
                     label="checking your model")

    def _opened(self, workspace, folder) -> None:
        if self.runs is not None:
            self.runs.note_origin(workspace, folder)  # a run of it carries on its curves
        self.set_workspace(workspace)
        cut = _core().history_cut(workspace)
        if cut is not None:  # the curves end early: said, never accepted silently
            self.error.emit(f"{folder}: {cut}")

    def resume_from(self, folder: str | Path,
                    steps: int | Callable[[int], int] | None = None) -> None:
        """Open a checkpoint and go on training it (its optimiser state included) for `steps`
        more steps (a function of the step it was saved at: the Training dock's "until")."""
        self.stop_training()
        self._resume_steps = steps
        self.run_job(_load_checkpoint, str(folder), on_done=lambda workspace: self._train_loaded(
            workspace, folder), label="loading")

    def _train_loaded(self, workspace, folder) -> None:
        self._opened(workspace, folder)
        steps = self._resume_steps
        self.train(steps=steps(workspace.step) if callable(steps) else steps)

    def save_checkpoint(self, folder: str | Path) -> Path:
        """Save between steps: a running trainer stops (leaving its optimiser state in the
        workspace), the checkpoint is written, and training goes on from the same step."""
        if self.workspace is None:
            raise _user_error("there is no model to save yet")
        was_training = self.is_training()
        paused = was_training and self.control.paused
        self.stop_training()
        self.workspace.train_config = self.train_config
        try:
            return Path(_core().save_checkpoint(self.workspace, Path(folder)))
        finally:
            if was_training:
                self._train_on(paused)

    def _train_on(self, paused: bool) -> None:
        """Restart a stopped run for the steps it had left. A run stopped between its last step
        and its thread's end has none: starting it again would add a step (found by the soak)."""
        target = self.app_state.training.target_steps
        if target is None:
            self.train(paused=paused)
        elif target > self.workspace.step:
            self.train(steps=target - self.workspace.step, paused=paused)

    # -- training --------------------------------------------------------------------------------

    def update_train_config(self, **changes) -> None:
        """Change lr, batch size, context, clip τ, device or seed; a running trainer picks them
        up."""
        changes = {k: v for k, v in changes.items() if getattr(self.train_config, k, v) != v}
        if not changes or self.train_config is None:
            return
        self.train_config = dataclasses.replace(self.train_config, **changes)
        self.bus.train_config_changed.emit(self.train_config)
        if self.control is None or not self.is_training():
            return
        live = {k: v for k, v in changes.items() if k in _core().LIVE_OPTIONS}
        if live == changes:
            self.control.update(**live)
            return
        # batch size, context, device and seed shape the data feed and the optimiser: restart from
        # this step
        paused = self.control.paused
        self.stop_training()
        self._train_on(paused)

    def is_training(self) -> bool:
        return self.training is not None and self.training.is_running()

    def train(self, steps: int | None = None, paused: bool = False) -> None:
        """Start (or, when paused, resume) training the workspace from its current step."""
        if self.workspace is None:
            self.error.emit("Create or open a model first (Model ▸ New model, or File ▸ Open).")
            return
        if self.is_training():
            self.resume()
            return
        self.stop_training()  # a run that has ended but whose `finished` is still queued
        # an evaluation or a probe still reading the weights finishes first
        self.jobs.wait_idle()
        self.prober.wait_idle()
        core = _core()
        config = self.train_config
        if steps is not None:
            config = dataclasses.replace(config, steps=self.workspace.step + steps)
        # a probe costs the attention and gradient panels a full repaint: at most one a second
        # keeps the GUI thread (and the GIL) free for a steady frame rate
        config = dataclasses.replace(config, probe_every_s=max(config.probe_every_s, PROBE_EVERY_S))
        target_steps = config.steps
        self.control = core.TrainerControl()
        if paused:
            self.control.pause()
        try:  # e.g. a device that is not there: say so, keep the model
            # one core stays with the GUI thread (explorer.runtime.choose_threads)
            trainer = core.Trainer(self.workspace, config, control=self.control, keep_cores=1)
        except Exception as exc:  # noqa: BLE001
            self.error.emit(one_line(exc))
            return
        self.device_changed.emit(str(trainer.device))
        from explorer.analysis.probe import make_probe_fn

        trainer.probe_fn = make_probe_fn(self.workspace, self.prober.input)
        try:  # the run folder (explorer/ui/autosave.py), written by the worker as it trains
            recorder = None if self.runs is None else self.runs.recorder_for(self.workspace)
        except Exception as exc:  # noqa: BLE001 - no run folder, but the training goes on
            recorder = None
            self.error.emit(f"cannot record this training: {one_line(exc)}")
        worker = TrainingWorker(trainer, self.control, recorder=recorder)
        worker.batch.connect(self._on_batch)
        worker.failed.connect(self.error)
        worker.notice.connect(self.error)
        worker.finished.connect(self._on_finished)
        self.training = WorkerThread(worker, [worker.finished], self)
        self.training.start()
        self.app_state.set_training("paused" if paused else "running", target_steps=target_steps)

    def pause(self) -> None:
        if self.is_training():
            self.control.pause()
            self.app_state.set_training("paused")

    def resume(self) -> None:
        if self.is_training():
            self.control.resume()
            self.app_state.set_training("running")

    def step_once(self) -> None:
        """One optimisation step: from idle, a paused run is started and stepped."""
        if not self.is_training():
            self.train(paused=True)
            if not self.is_training():
                return
        self.control.step_once()
        self.app_state.set_training("paused")

    def stop_training(self) -> None:
        """Stop and join the training thread; safe to call at any time."""
        if self.training is None:
            return
        self.training.stop(self.control)
        self.training.wait()
        # deliver what the worker queued before it ended (last steps, `finished`) now, so no
        # signal of this run can arrive after a new run or another workspace has started
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)
        if self.training is not None:
            self._forget_training()
            self.app_state.set_training("stopped")

    def _forget_training(self) -> None:
        """Let the joined run's thread, worker and trainer go: the WorkerThread is the
        controller's child, so without deleteLater every run ever started stayed alive (and with
        it its Trainer and data feed), found by benchmarks/bench_soak.py."""
        training, self.training = self.training, None
        if training.is_running():  # wait() timed out: a QThread must not be deleted while it runs
            training.ended.connect(training.deleteLater)
        else:
            training.deleteLater()

    def shutdown(self) -> None:
        """End every thread before the window goes: nothing may outlive its owner."""
        self.stop_training()
        if self.runs is not None:
            self.runs.release()  # a clean exit: no recovery offer next time
        self.jobs.shutdown()
        self.prober.shutdown()

    # -- background jobs -------------------------------------------------------------------------

    def run_job(self, fn, *args, on_done=None, label: str = "working") -> int:
        """Run `fn(*args)` in the workspace job runner; a newer job supersedes this one. Its
        result goes to `on_done`, an error to `error` as one line."""
        job = self.jobs.submit(fn, *args)
        self._on_done = {job: on_done} if on_done is not None else {}
        if self.jobs.busy:
            self.busy.emit(label)
        return job

    def _on_job_done(self, job: int, result) -> None:
        on_done = self._on_done.pop(job, None)
        if on_done is not None:
            on_done(result)

    def _on_jobs_busy(self, busy: bool) -> None:
        if not busy:
            self.busy.emit("")

    def _on_first_look(self, result) -> None:
        workspace, metrics = result
        if workspace is self.workspace and metrics is not None:  # not replaced meanwhile
            self.bus.eval_metrics.emit(metrics)

    # -- events from the training worker ---------------------------------------------------------

    def _on_batch(self, batch) -> None:
        if batch.steps:
            self.bus.step_metrics.emit(batch.steps)
            self.stats.emit(batch.steps[-1])
        for metrics in batch.evals:
            self.bus.eval_metrics.emit(metrics)
        if batch.probe is not None:
            self.bus.probe.emit(batch.probe)

    def _on_finished(self, finished) -> None:
        self.finished_runs += 1
        current = self.training is not None and self.sender() is self.training.worker
        if current:  # not a run that stop_training() already joined and replaced
            self.training.wait()
            self._forget_training()
            self.app_state.set_training("idle" if finished.reason == "done" else "stopped")
        if finished.reason in ("nan", "oom"):  # the weights of the last good step are kept
            self.error.emit(finished.message)
        self.training_finished.emit(finished)


def _open_and_check(build: str, weights, tokenizer):
    from explorer.usermodel.check import check_workspace, open_checked

    workspace = open_checked(build, weights, tokenizer)
    return workspace, check_workspace(workspace, build)


def _load_checkpoint(folder: str):
    return _core().load_checkpoint(folder)


def first_look(workspace):
    """What the curves and BLEU panels show before any training: a quick evaluation, with BLEU of
    greedy decodes of a few validation sentences for seq2seq models. Runs in a worker thread."""
    if workspace.data is None:
        return workspace, None
    return workspace, _core().evaluate(workspace, bleu_examples=16 if workspace.is_seq2seq else 0)


def _user_error(message: str):
    from explorer.errors import UserError

    return UserError(message)


def build_workspace_job(model_config, data_spec, current):
    """A fresh workspace, in a worker: explorer.training.setup.next_workspace's policy."""
    from explorer.training.setup import next_workspace

    return next_workspace(model_config, data_spec, current)
