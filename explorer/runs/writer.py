"""RunWriter: what `explorer train --out DIR` writes while it trains (see explorer.runs).

    writer = RunWriter(out, snapshot_every=100)
    writer.check_target(resume=False)          # before any work: refuse a folder in use
    writer.start(workspace, trainer, build=...)
    for event in trainer.run():
        writer.record(event)
    writer.finish(workspace)                   # the latest checkpoint at the top level
    writer.close()

Rows reach metrics.jsonl with one unbuffered write() each, so a reader sees whole rows or a last
line still being written (which it leaves for later), never a row with a gap in it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from explorer.errors import UserError
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


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def encode_row(row: dict[str, Any]) -> bytes:
    return (json.dumps({k: _finite(v) for k, v in row.items()}) + "\n").encode("utf-8")


class RunWriter:
    def __init__(self, folder: str | Path, snapshot_every: int | None = None,
                 tensorboard: bool = True, stream=None) -> None:
        if snapshot_every is not None and snapshot_every < 1:
            raise UserError(f"--snapshot-every must be at least 1, got {snapshot_every}")
        self.folder = Path(folder)
        self.snapshot_every = snapshot_every
        self.want_tensorboard = tensorboard
        self.stream = stream or sys.stderr
        self.trainer = None
        self._fd: int | None = None
        self._tb = None
        self._owns_pid_file = False
        self._finished = False
        self._last_snapshot: int | None = None

    # -- before training -------------------------------------------------------------------

    def check_target(self, resume: bool) -> None:
        """Refuse a folder another training writes, or one that holds a run, unless resuming."""
        folder = self.folder
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder}: exists and is not a folder; choose another --out")
        if layout.writer_alive(folder) is not False:
            record = layout.read_writer(folder) or {}
            raise UserError(f"{folder}: another training (pid {record.get('pid')} on "
                            f"{record.get('host')}) is writing this run; wait for it or choose "
                            "another --out")
        if not folder.is_dir() or not any(folder.iterdir()):
            return
        if not (folder / layout.CONFIG_FILE).is_file():
            raise UserError(f"{folder}: exists and is not a run or checkpoint; choose another "
                            "--out")
        if not resume:
            raise UserError(f"{folder}: already holds a run; continue it with --resume {folder}, "
                            "or choose another --out")

    def _claim(self) -> None:
        """Create writer.json exclusively: of two trainings started at once, one wins."""
        path = self.folder / layout.WRITER_FILE
        if path.exists() and layout.writer_alive(self.folder) is False:
            path.unlink(missing_ok=True)  # left by a process that died
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self.check_target(resume=True)  # raises: someone claimed it first
            raise
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(layout.writer_record(), out)
        self._owns_pid_file = True

    def start(self, workspace, trainer, build: dict[str, Any] | None = None,
              resumed_from: str | None = None) -> None:
        """Claim the folder, write config.json and the starting checkpoint, open metrics.jsonl.

        `build`: how the untrained model was made (family, preset, seed, model overrides), which
        `explorer replay` repeats; `resumed_from`: the checkpoint this training continues."""
        self.trainer = trainer
        elsewhere = resumed_from is not None and not _same(resumed_from, self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._claim()
        existing = _read_json(self.folder / layout.CONFIG_FILE)
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
            run["build"] = ((_read_json(Path(resumed_from) / layout.CONFIG_FILE) or {})
                            .get("run", {}).get("build"))
        run.setdefault("data_files", {})
        if workspace.data_spec is not None:
            run["data_files"].update(layout.data_files(workspace.data_spec))
        if workspace.data is not None:
            run["data_sha256"] = layout.splits_sha256(workspace.data)
        metrics = self.folder / layout.METRICS_FILE
        _drop_torn_row(metrics)
        self._fd = os.open(metrics, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if elsewhere:
            self._write_rows(workspace.history)  # a new folder carries the curves so far
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
        os.write(self._fd, encode_row(row))  # one write per row: whole or not yet there

    def _write_rows(self, rows: list[dict]) -> None:
        if rows:
            os.write(self._fd, b"".join(encode_row(row) for row in rows))

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

    def snapshot(self, workspace) -> Path:
        """A full checkpoint of this step in snapshots/step-NNNNNN (renamed into place whole)."""
        from explorer.training.checkpoint import save_checkpoint

        step = workspace.step
        path = layout.snapshot_dir(self.folder, step)
        state = self.trainer.training_state() if self.trainer.optimizer is not None else None
        # the curves live in the run's metrics.jsonl: a snapshot holds none (RunReader adds them)
        frozen = dataclasses.replace(workspace, history=[], train_config=self.trainer.config)
        save_checkpoint(frozen, path, optimizer=state if state is not None else False)
        self._last_snapshot = step
        self.write_row({"event": "snapshot", "step": step,
                        "path": str(path.relative_to(self.folder))})
        return path

    def save_latest(self, workspace, train_config=None) -> None:
        """The top-level checkpoint, file by file: the run's own metrics.jsonl and snapshots stay.

        Each file is renamed into place whole, config.json last, so a reader of config.json finds
        the weights it describes."""
        from explorer.training.checkpoint import save_checkpoint

        staging = self.folder / ".latest.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        frozen = dataclasses.replace(workspace, history=[],
                                     train_config=train_config or workspace.train_config)
        save_checkpoint(frozen, staging)
        try:
            for path in sorted(staging.iterdir()):
                if path.name not in (layout.CONFIG_FILE, layout.METRICS_FILE):
                    os.replace(path, self.folder / path.name)
            config = json.loads((staging / layout.CONFIG_FILE).read_text(encoding="utf-8"))
            config["run"] = self.run_section
            temporary = staging / "config.run.json"
            temporary.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
            os.replace(temporary, self.folder / layout.CONFIG_FILE)
        finally:
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
        if self._fd is not None and not self._finished:
            self._finished = True
            self.write_row({"event": "finished", "step": step, "reason": reason,
                            "message": message, "time": time.time()})

    def close(self, error: BaseException | None = None) -> None:
        """Release the folder; a training that ended by an exception gets its `finished` row."""
        if error is not None:
            reason = "interrupted" if isinstance(error, KeyboardInterrupt) else "error"
            step = getattr(getattr(self.trainer, "workspace", None), "step", None)
            self.end(reason, str(error).splitlines()[0] if str(error) else "", step)
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._owns_pid_file:
            (self.folder / layout.WRITER_FILE).unlink(missing_ok=True)
            self._owns_pid_file = False


def _drop_torn_row(path: Path) -> None:
    """Cut a last row that an earlier writer left half-written when it died (readers never
    consumed it: they stop at the last newline)."""
    try:
        with open(path, "rb") as data:
            size = data.seek(0, os.SEEK_END)
            data.seek(max(0, size - (1 << 20)))
            tail = data.read()
    except FileNotFoundError:
        return
    if tail and not tail.endswith(b"\n"):
        os.truncate(path, size - len(tail) + tail.rfind(b"\n") + 1)


def _same(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
