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
durable.JsonlAppender, one write() per row, so a reader sees whole rows or a last line still being
written (which it leaves for later), never a row with a gap in it.

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
        self._metrics.append([row])  # one write per row: whole or not yet there

    def record(self, event) -> None:
        from explorer.events import EvalMetrics, StepMetrics

        if isinstance(event, StepMetrics):
            row = {name: getattr(event, name) for name in STEP_FIELDS}
            self.write_row(row)
            self._scalars(row, event.step)
            if self.snapshot_every and event.step % self.snapshot_every == 0:
                self.snapshot(self.trainer.workspace)
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

    def snapshot(self, workspace) -> Path | None:
        """A full checkpoint of this step in snapshots/step-NNNNNN, swapped into place whole. A
        failed one (a full disk) is a warning: training and the run's other files go on."""
        from explorer.training.checkpoint import save_folder

        step = workspace.step
        path = layout.snapshot_dir(self.folder, step)
        state = self.trainer.training_state() if self.trainer.optimizer is not None else None
        # the curves live in the run's metrics.jsonl: a snapshot holds none (RunReader adds them)
        frozen = dataclasses.replace(workspace, history=[], train_config=self.trainer.config)
        try:
            save_folder(frozen, path, optimizer=state if state is not None else False)
        except UserError as exc:
            self.stream.write(f"\nwarning: {exc}\n")
            return None
        self._last_snapshot = step
        self.write_row({"event": "snapshot", "step": step,
                        "path": str(path.relative_to(self.folder))})
        return path

    def save_latest(self, workspace, train_config=None, optimizer=None) -> None:
        """The top-level checkpoint, crash-safe although the folder also holds the run (see the
        module docstring). `optimizer` as in save_checkpoint. A failure is a UserError naming
        the run folder; the previous checkpoint there is unchanged."""
        from explorer.training.checkpoint import save_folder

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
        if error is not None:
            reason = "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
            step = getattr(getattr(self.trainer, "workspace", None), "step", None)
            self.end(reason, first_line(error, default=""), step)
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None
        if self._locked:
            self._locked = False
            self._lock.release()


def _same(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()



