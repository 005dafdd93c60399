"""RunWriter: what `explorer train --out DIR` writes while it trains (see explorer.runs).

    writer = RunWriter(out, snapshot_every=100)
    writer.claim(resume=False)                 # before any work: lock the folder, refuse misuse
    writer.start(workspace, trainer, build=...)
    for event in trainer.run():
        writer.record(event)                   # metrics rows; snapshots every N steps
    writer.finish(workspace, finished)         # the latest checkpoint at the top level
    writer.close()                             # the lock is released

One lock: the folder's explorer.durable.FolderLock, held from `claim` to `close` (Autosave takes the
same lock again, re-entrantly). One metrics writer: rows reach metrics.jsonl through a
durable.JsonlAppender, one write() of whole rows at a time, so a reader sees whole rows or a last
line still being written (which it leaves for later), never a row with a gap in it. Step rows are
gathered for up to ROWS_EVERY_S and written together (a write per step cost the app's training
thread, and the window that follows the run, a file change to read every step); every other row,
a snapshot, a checkpoint and `close` write the gathered rows first, so a checkpoint or snapshot is
never ahead of the curves on disk.

The snapshots a training makes every N steps are written by the writer's own thread: `record`
copies the weights and the optimizer's state (between two steps, so they belong together) and the
thread writes and fsyncs them while training goes on; the snapshot's row follows once it is on
disk. At most one is in flight (the next one, `finish` and `close` wait for it), so a copy of the
model is all the memory it takes. Written in the training thread, they cost the app's training
1-1.5% of its time (benchmarks/RESULTS.md, issue 22).

Crash safety: each snapshot is a folder swapped into place whole (durable.replace_folder). The
top-level checkpoint shares its folder with metrics.jsonl and snapshots/, so it cannot be swapped
whole: `save_latest` writes the complete checkpoint to DIR/.latest.new first (atomically), then
moves its files up one by one, config.json last, and removes the staging. config.json names the
step, so a kill at any moment leaves a folder that loads, whose step never goes back (the weights
may then be newer than config.json's step until the next writer, which finishes the moves first).
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from explorer.durable import FolderLock, JsonlAppender, fsync_dir, repair_jsonl
from explorer.errors import UserError, first_line, read_json_object
from explorer.runs import layout

STEP_FIELDS = ("step", "loss", "lr", "grad_norm", "grad_norm_clipped", "tokens", "tokens_per_s",
               "elapsed_s")
EVAL_FIELDS = ("val_loss", "perplexity", "token_accuracy", "bleu")
TB_SCALARS = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
              "tokens_per_s": "train/tokens_per_s", "val_loss": "eval/val_loss",
              "perplexity": "eval/perplexity", "token_accuracy": "eval/token_accuracy",
              "bleu": "eval/bleu"}
TB_MISSING = ("TensorBoard is not installed: no TensorBoard scalars "
              "(pip install 'sequence-model-explorer[tensorboard]')")
SKIPPED_FILES = (layout.CONFIG_FILE, layout.METRICS_FILE)  # config.json moves last; metrics stay
OPTIONAL_FILES = ("optimizer.pt", "src_tokenizer.json")  # a newer save may have none
ROWS_EVERY_S = 1.0  # step rows wait at most this long for their write (a crash loses no more)


class RunWriter:
    def __init__(self, folder: str | Path, snapshot_every: int | None = None,
                 tensorboard: bool = True, stream=None) -> None:
        if snapshot_every is not None and snapshot_every < 0:  # 0: none, as in the app's settings
            raise UserError(f"--snapshot-every must be 0 (no snapshots) or more, got "
                            f"{snapshot_every}")
        self.folder = Path(folder)
        self.snapshot_every = snapshot_every
        self.want_tensorboard = tensorboard
        self.stream = stream or sys.stderr
        self.trainer = None
        self.run_section: dict[str, Any] = {}
        self._lock = FolderLock(self.folder)
        self._locked = False
        self._metrics: JsonlAppender | None = None
        self._tb = None
        self._finished = False
        self._last_snapshot: int | None = None
        self._pending_rows: list[dict[str, Any]] = []  # step rows not written yet
        self._rows_written = -math.inf  # time.monotonic() of the last write
        self._snapshotter: ThreadPoolExecutor | None = None  # writes the periodic snapshots
        self._snapshot_in_flight: Future | None = None

    # -- before training -------------------------------------------------------------------

    def claim(self, resume: bool) -> None:
        """Lock the folder for this writer (a one-line UserError naming the live process that
        holds it, --resume or not), then refuse a folder that holds something other than a run
        or checkpoint, and a run unless resuming; finish a save a kill interrupted."""
        self._lock.acquire()
        self._locked = True
        try:
            if self.folder.is_dir():
                self._finish_moves()  # a save a kill interrupted, before anyone loads the folder
            self._check_target(resume)
        except BaseException:
            self.close()
            raise

    def _check_target(self, resume: bool) -> None:
        folder = self.folder
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder}: exists and is not a folder; choose another --out")
        if not folder.is_dir() or not any(folder.iterdir()):
            return
        if not (folder / layout.CONFIG_FILE).is_file():
            raise UserError(f"{folder}: exists and is not a checkpoint or run; choose another "
                            "--out")
        if not resume:
            raise UserError(f"{folder}: already holds a run; continue it with --resume {folder}, "
                            "or choose another --out")

    def start(self, workspace, trainer, build: dict[str, Any] | None = None,
              resumed_from: str | None = None) -> None:
        """After `claim`: write config.json and the starting checkpoint, open metrics.jsonl.

        `build`: how the untrained model was made (family, preset, seed, model overrides), which
        `explorer replay` repeats; `resumed_from`: the checkpoint this training continues."""
        if not self._locked:
            raise RuntimeError("RunWriter.start before claim")
        self.trainer = trainer
        elsewhere = resumed_from is not None and not _same(resumed_from, self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        existing = read_json_object(self.folder / layout.CONFIG_FILE)
        run = (existing or {}).get("run")
        if run is None:  # a new run, or the first run section of a plain checkpoint
            run = {"format": layout.RUN_FORMAT, "seed": trainer.config.seed,
                   "versions": layout.versions(), "build": build,
                   "snapshot_every": self.snapshot_every,
                   "world_size": int(os.environ.get("WORLD_SIZE", "1"))}
        self.run_section = run
        if self.snapshot_every is None:  # a resumed run keeps its snapshot cadence
            self.snapshot_every = run.get("snapshot_every")
        if elsewhere and run.get("build") is None:
            run["build"] = ((read_json_object(Path(resumed_from) / layout.CONFIG_FILE) or {})
                            .get("run", {}).get("build"))
        run.setdefault("data_files", {})
        if workspace.data_spec is not None:  # the readers hashed the files as they read them
            from explorer.training.checkpoint import data_digests

            run["data_files"].update(data_digests(workspace) or layout.data_files(workspace.data_spec))
        if workspace.data is not None:
            run["data_sha256"] = layout.splits_sha256(workspace.data)
        metrics = self.folder / layout.METRICS_FILE
        repair_jsonl(metrics)  # a row a killed writer left half-written
        self._metrics = JsonlAppender(metrics)
        if elsewhere and workspace.history:
            self._metrics.append(workspace.history)  # a new folder carries the curves so far
        self.save_latest(workspace, trainer.config)
        kind = "resumed" if (existing or resumed_from) else "started"
        self._segment_row(kind, workspace)
        if self.snapshot_every and kind == "started":
            self.snapshot(workspace)
        self._open_tensorboard()

    def continue_with(self, workspace, trainer) -> None:
        """A new training segment in this run, like a --resume (`explorer replay` uses it)."""
        self.trainer = trainer
        self._segment_row("resumed", workspace)

    def _segment_row(self, kind: str, workspace) -> None:
        """`started` / `resumed`: the settings of the training that writes the rows after it."""
        self.write_row({"event": kind, "step": workspace.step, "time": time.time(),
                        "train": self.trainer.config.to_dict(),
                        "data_files": self.run_section["data_files"],
                        "versions": layout.versions(),
                        "world_size": int(os.environ.get("WORLD_SIZE", "1"))})

    def _open_tensorboard(self) -> None:
        if not self.want_tensorboard:
            return
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            self.stream.write(f"info: {TB_MISSING}\n")
            return
        self._tb = SummaryWriter(log_dir=str(self.folder / layout.TENSORBOARD_DIR))

    # -- while training ----------------------------------------------------------------------

    def write_row(self, row: dict[str, Any]) -> None:
        """An event row (evaluation, snapshot, segment, end), written now after the gathered
        step rows."""
        self._pending_rows.append(row)
        self.flush_rows()

    def flush_rows(self) -> None:
        """Write the gathered rows in one write(): whole or not yet there."""
        if self._pending_rows and self._metrics is not None:
            rows, self._pending_rows = self._pending_rows, []
            self._metrics.append(rows)
        self._rows_written = time.monotonic()

    def _write_step_row(self, row: dict[str, Any]) -> None:
        self._pending_rows.append(row)
        if time.monotonic() - self._rows_written >= ROWS_EVERY_S:
            self.flush_rows()

    def record(self, event) -> None:
        from explorer.events import EvalMetrics, StepMetrics

        self._collect_snapshot(wait=False)
        if isinstance(event, StepMetrics):
            row = {name: getattr(event, name) for name in STEP_FIELDS}
            self._write_step_row(row)
            self._scalars(row, event.step)
            if self.snapshot_every and event.step % self.snapshot_every == 0:
                self.snapshot(self.trainer.workspace, in_background=True)
        elif isinstance(event, EvalMetrics):
            row = {"event": "eval", "step": event.step,
                   **{k: getattr(event, k) for k in EVAL_FIELDS if getattr(event, k) is not None}}
            self.write_row(row)
            self._scalars(row, event.step)

    def _scalars(self, row: dict[str, Any], step: int) -> None:
        if self._tb is None:
            return
        for key, tag in TB_SCALARS.items():
            value = row.get(key)
            if value is not None and math.isfinite(value):
                self._tb.add_scalar(tag, value, step)

    def snapshot(self, workspace, in_background: bool = False) -> None:
        """A full checkpoint of this step in snapshots/step-NNNNNN, swapped into place whole. A
        failed one (a full disk) is a warning: training and the run's other files go on.
        `in_background`: copy the weights and optimizer state now, write them in the writer's
        thread (see the module docstring)."""
        from explorer.readers import frozen_copy
        from seqmodels.state import map_state

        self._collect_snapshot(wait=True)
        self.flush_rows()  # no snapshot on disk is ahead of the curves
        state = self.trainer.training_state() if self.trainer.optimizer is not None else None
        # the curves live in the run's metrics.jsonl: a snapshot holds none (RunReader adds them)
        frozen = dataclasses.replace(workspace, history=[], train_config=self.trainer.config)
        path = layout.snapshot_dir(self.folder, workspace.step)
        if in_background:
            try:
                frozen.model = frozen_copy(workspace.model)
            except (TypeError, RuntimeError):  # a user's model that cannot be deep-copied
                in_background = False
        if not in_background:
            self._snapshot_written(_write_snapshot(frozen, path, state))
            return
        state = map_state(state, lambda t: t.detach().clone())  # the live one, before the next step
        if self._snapshotter is None:
            self._snapshotter = ThreadPoolExecutor(1, thread_name_prefix="run-snapshots")
        self._snapshot_in_flight = self._snapshotter.submit(_write_snapshot, frozen, path, state)

    def _collect_snapshot(self, wait: bool) -> None:
        """The row (or warning) of the snapshot in flight, once it is written (`wait`: now)."""
        job = self._snapshot_in_flight
        if job is not None and (wait or job.done()):
            self._snapshot_in_flight = None
            self._snapshot_written(job.result())

    def _snapshot_written(self, outcome: tuple[int, Path] | UserError) -> None:
        if isinstance(outcome, UserError):
            self.stream.write(f"\nwarning: {outcome}\n")
            return
        step, path = outcome
        self._last_snapshot = step
        self.write_row({"event": "snapshot", "step": step,
                        "path": str(path.relative_to(self.folder))})

    def save_latest(self, workspace, train_config=None, optimizer=None) -> None:
        """The top-level checkpoint, crash-safe although the folder also holds the run (see the
        module docstring). `optimizer` as in save_checkpoint. A failure is a UserError naming
        the run folder; the previous checkpoint there is unchanged."""
        from explorer.training.checkpoint import save_folder

        self.flush_rows()  # the curves on disk reach at least the checkpoint's step
        frozen = dataclasses.replace(workspace, history=[],
                                     train_config=train_config or workspace.train_config)
        staging = self.folder / layout.LATEST_STAGING
        save_folder(frozen, staging, optimizer, named=self.folder, extra={"run": self.run_section})
        for name in OPTIONAL_FILES:  # not part of this save: an older one's must not stay
            if not (staging / name).exists():
                (self.folder / name).unlink(missing_ok=True)
        self._finish_moves()

    def _finish_moves(self) -> None:
        """Move a complete staged checkpoint's files up, config.json last; drop the staging."""
        staging = self.folder / layout.LATEST_STAGING
        if not (staging / layout.CONFIG_FILE).is_file():
            shutil.rmtree(staging, ignore_errors=True)  # nothing, or nothing complete
            return
        for path in sorted(staging.iterdir()):
            if path.name not in SKIPPED_FILES:
                os.replace(path, self.folder / path.name)
        os.replace(staging / layout.CONFIG_FILE, self.folder / layout.CONFIG_FILE)
        fsync_dir(self.folder)
        shutil.rmtree(staging, ignore_errors=True)

    # -- after training ----------------------------------------------------------------------

    def finish(self, workspace, finished) -> None:
        """The end of a training: a last snapshot, the latest checkpoint, the `finished` row."""
        self._collect_snapshot(wait=True)
        if (self.snapshot_every and finished.reason not in ("nan", "oom")
                and self._last_snapshot != workspace.step):
            self.snapshot(workspace)
        self.save_latest(workspace)
        self.end(finished.reason, finished.message, workspace.step)

    def end(self, reason: str, message: str = "", step: int | None = None) -> None:
        if self._metrics is not None and not self._finished:
            self._finished = True
            self.write_row({"event": "finished", "step": step, "reason": reason,
                            "message": message, "time": time.time()})

    def close(self, error: BaseException | None = None) -> None:
        """Release the folder; a training that ended by an exception gets its `finished` row."""
        try:
            self._collect_snapshot(wait=True)  # its row before the `finished` one
        finally:
            if self._snapshotter is not None:
                self._snapshotter.shutdown()
                self._snapshotter = None
            self._close(error)

    def _close(self, error: BaseException | None) -> None:
        if error is not None:
            reason = "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
            step = getattr(getattr(self.trainer, "workspace", None), "step", None)
            self.end(reason, first_line(error, default=""), step)
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._metrics is not None:
            self.flush_rows()
            self._metrics.close()
            self._metrics = None
        if self._locked:
            self._locked = False
            self._lock.release()


def _write_snapshot(frozen, path: Path, state) -> tuple[int, Path] | UserError:
    """(step, path) of the snapshot written, or why it could not be (any thread)."""
    from explorer.training.checkpoint import save_folder

    try:
        save_folder(frozen, path, optimizer=state if state is not None else False)
    except UserError as exc:
        return exc
    return frozen.step, path


def _same(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()



