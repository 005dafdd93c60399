"""Record a training run from your own loop, into the same run folder `explorer train --out` writes.

    with explorer.Recorder("runs/mine", model=model, tokenizer=vocab, snapshot_every=100,
                           build="my_model:build", args={"dim": 64}) as record:
        for step in range(1, 1001):
            ...
            record.step(step, loss=loss, lr=scheduler.get_last_lr()[0], grad_norm=norm)
            if step % 200 == 0:
                record.eval(step, val_loss=val, bleu=bleu)

The folder (explorer.runs) holds config.json (how to rebuild the model: `build`, "module:function"
or "file.py:function", and its JSON `args`), append-only metrics.jsonl, snapshots/step-NNNNNN (the
model's state_dict as safetensors) and the latest checkpoint at the top level, written by the
RunWriter under the folder's FolderLock, so the app opens, follows, scrubs and compares it like its
own runs. A kill at any moment leaves a folder that opens, whose step never goes back: rows are
whole lines, snapshots appear whole, the top-level checkpoint moves up config.json last.

Snapshots cost the training loop one copy of the weights: the copy is written by a background
thread (one at a time; a snapshot due while the last is still being written waits for it).
"""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from explorer.errors import UserError


@dataclass
class _Frozen:
    """A copy of the weights as save_model sees a model: a config and a state_dict."""

    config: Any
    state: dict

    def state_dict(self) -> dict:
        return self.state


class _Loop:
    """What the RunWriter reads of a trainer: its settings and (no) optimizer."""

    def __init__(self, workspace, config) -> None:
        self.workspace, self.config, self.optimizer = workspace, config, None

    def training_state(self):
        return None


class Recorder:
    def __init__(self, folder: str | Path, model, tokenizer, snapshot_every: int | None = 100, *,
                 kind: str | None = None, adapter=None, build: str | None = None,
                 args: dict | None = None, src_tokenizer=None, hparams: dict | None = None,
                 seed: int = 0, resume: bool = False, tensorboard: bool = False) -> None:
        """`build`/`args`: how to rebuild the model (`build(**args)` returns the model and its
        tokenizer, as for `--model`); without them the model's class is recorded with no
        arguments, and the app opens the run's weights with `--model FILE.py:build --weights`.
        `hparams`: your settings, kept in config.json. `resume`: append to a run in `folder`."""
        from explorer.runs.reader import RunReader
        from explorer.runs.writer import RunWriter
        from explorer.training.config import TrainConfig
        from explorer.usermodel.loader import allow, make_workspace

        if build is None:
            build, args = f"{type(model).__module__}:{type(model).__qualname__}", None
        else:
            allow(build)  # the user named it: this process may rebuild from it
        self.workspace = make_workspace(model, tokenizer, adapter and replace(
            adapter, kind=kind or adapter.kind), build, args, src_tokenizer) if adapter else \
            make_workspace(model, tokenizer, _adapter(kind), build, args, src_tokenizer)
        self.folder = Path(folder)
        self._writer = RunWriter(self.folder, snapshot_every, tensorboard=tensorboard)
        self._writer.claim(resume=resume)
        self._rows = threading.Lock()  # the training thread and the snapshot thread both append
        self._last_step = -1
        self._t0 = time.perf_counter()
        self._pending: queue.Queue = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._closed = False
        try:
            if resume and (self.folder / "metrics.jsonl").is_file():
                reader = RunReader(self.folder)
                reader.read_new()
                steps = [r["step"] for r in reader.rows if isinstance(r.get("step"), int)]
                self._last_step = self.workspace.step = max(steps, default=0)
            config = self.workspace.model.config
            self._writer.start(self.workspace, _Loop(self.workspace, TrainConfig(seed=seed)),
                               build={"family": config.family, "function": build, "args": args,
                                      "hparams": dict(hparams or {})})
        except BaseException as exc:
            self._writer.close(exc)
            raise
        self._thread = threading.Thread(target=self._write_snapshots, name="explorer-recorder",
                                        daemon=True)
        self._thread.start()

    # -- the loop's calls -----------------------------------------------------------------------

    def step(self, step: int, loss=None, lr=None, **more) -> None:
        """One training step's row (floats, or 0-d tensors); a snapshot every `snapshot_every`."""
        self._check_open()
        step = int(step)
        if step <= self._last_step:
            raise UserError(f"Recorder.step({step}) after step {self._last_step}: steps must "
                            "increase")
        row = {"step": step, "loss": _number(loss), "lr": _number(lr),
               "elapsed_s": time.perf_counter() - self._t0,
               **{key: _number(value) for key, value in more.items()}}
        self._append(row)
        self._last_step = self.workspace.step = step
        every = self._writer.snapshot_every
        if every and step % every == 0:
            self.snapshot()

    def eval(self, step: int, val_loss=None, bleu=None, **more) -> None:
        """An evaluation at `step` (a step already recorded, or 0 before training)."""
        self._check_open()
        step = int(step)
        if step > max(self._last_step, 0):
            raise UserError(f"Recorder.eval({step}) before step {step} was recorded: call "
                            "record.step first")
        val_loss = _number(val_loss)
        row = {"event": "eval", "step": step, "val_loss": val_loss, "bleu": _number(bleu),
               **{key: _number(value) for key, value in more.items()}}
        if val_loss is not None and "perplexity" not in more:
            row["perplexity"] = math.exp(min(val_loss, 700.0))
        self._append({k: v for k, v in row.items() if v is not None})

    def snapshot(self) -> None:
        """A snapshot of the weights as they are now (written in the background)."""
        self._check_open()
        state = _copy_state(self.workspace.model.state_dict())
        self._pending.put((self.workspace.step, state))  # waits while the last one is written

    def close(self, error: BaseException | None = None) -> None:
        """Write the last snapshot and the latest checkpoint, the `finished` row, and let go of
        the folder. Also called by `with` (an exception there is recorded as the reason)."""
        if self._closed:
            return
        try:
            every = self._writer.snapshot_every
            if error is None and every and self._writer._last_snapshot != self.workspace.step \
                    and self._error is None:
                self.snapshot()
            self._pending.put(None)
            self._thread.join()
            if error is None and self._error is None:
                self._writer.end("done", "", self.workspace.step)
        finally:
            self._closed = True
            self._writer.close(error or self._error)

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(exc)

    # -- inside --------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UserError(f"{self.folder}: the Recorder is closed")
        if self._error is not None:
            raise UserError(f"{self.folder}: recording stopped ({self._error})")

    def _append(self, row: dict) -> None:
        with self._rows:
            self._writer.write_row(row)

    def _write_snapshots(self) -> None:
        """The background thread: each copy becomes a snapshot, then the top-level checkpoint."""
        from explorer.runs import layout
        from explorer.training.checkpoint import save_folder

        writer = self._writer
        while (job := self._pending.get()) is not None:
            step, state = job
            frozen = replace(self.workspace, model=_Frozen(self.workspace.model.config, state),
                             step=step, history=[])
            path = layout.snapshot_dir(self.folder, step)
            try:
                save_folder(frozen, path, optimizer=False)
                with self._rows:
                    writer.write_row({"event": "snapshot", "step": step,
                                      "path": str(path.relative_to(self.folder))})
                writer._last_snapshot = step
                writer.save_latest(frozen, optimizer=False)
            except Exception as exc:  # noqa: BLE001 - a full disk: stop recording, say so
                self._error = exc


def _adapter(kind):
    from explorer.usermodel.adapter import Adapter

    return Adapter(kind=kind)


def _number(value):
    """A float for the row (a tensor's value); None stays None; NaN/inf as JSON null."""
    if value is None:
        return None
    value = float(value.item() if hasattr(value, "item") else value)
    return value if math.isfinite(value) else None


def _copy_state(state: dict) -> dict:
    """CPU copies of the tensors, tied ones copied once (safetensors stores them once)."""
    copies: dict[tuple, Any] = {}
    for key, tensor in state.items():
        ident = (tensor.data_ptr(), tuple(tensor.shape), tensor.stride()) if tensor.numel() else key
        if ident not in copies:
            copies[ident] = tensor.detach().to("cpu", copy=True)
    return {key: copies[(t.data_ptr(), tuple(t.shape), t.stride()) if t.numel() else key]
            for key, t in state.items()}
