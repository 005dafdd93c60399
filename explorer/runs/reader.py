"""RunReader: a run folder's config, snapshots and metrics, read as far as they are written.

    reader = RunReader("runs/dates")
    reader.read_new()          # rows appended since the last call (complete lines only)
    curves = reader.curves()   # numpy arrays per metric, for the plots
    reader.snapshots()         # [Snapshot(step, path)], oldest first
    workspace = reader.open_snapshot(200)

metrics.jsonl is read from the byte offset where the last read stopped, and parsed by
explorer.durable.parse_jsonl like every JSON-lines file. A last line without its newline is still
being written (or its writer died mid-write): it is left for the next read, so no row is ever seen
torn, and none is skipped. A damaged line elsewhere is skipped, its number kept in
`bad_line_numbers` (the app's run state says so).
"""

from __future__ import annotations

import itertools
import json
import operator
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.durable import parse_jsonl
from explorer.errors import UserError
from explorer.history import EVAL_KEYS, history_from_rows, live_rows
from explorer.runs import layout

TRAIN_KEYS = ("step", "loss", "lr", "grad_norm", "grad_norm_clipped", "tokens", "tokens_per_s",
              "elapsed_s")


@dataclass(frozen=True)
class Snapshot:
    step: int
    path: Path


@dataclass
class Curves:
    """Columns for the plots: `train[key]` per step, `eval[key]` per evaluation (NaN = absent)."""

    train: dict[str, np.ndarray] = field(default_factory=dict)
    eval: dict[str, np.ndarray] = field(default_factory=dict)


class RunReader:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise UserError(f"{self.folder}: no such run folder")
        self.rows: list[dict] = []
        self.offset = 0  # bytes of metrics.jsonl consumed (up to the last complete line)
        self.bad_line_numbers: list[int] = []  # complete lines that were not JSON (a damaged file)
        self.lines = 0  # complete lines consumed
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file read
        self._finished_seen: tuple = (None, 0, None)  # (rows, how many looked at, finished row)

    @property
    def metrics_path(self) -> Path:
        return self.folder / layout.METRICS_FILE

    def config(self) -> dict[str, Any]:
        path = self.folder / layout.CONFIG_FILE
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}  # a run that has not written it yet
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"{path}: not valid JSON ({exc})") from None
        return config if isinstance(config, dict) else {}

    def read_new(self) -> list[dict]:
        """Rows appended since the last call. A file replaced or cut shorter is read again from
        its start (`self.rows` then starts over too)."""
        try:
            handle = open(self.metrics_path, "rb")
        except FileNotFoundError:
            return []
        with handle:
            stat = os.fstat(handle.fileno())
            identity = (stat.st_dev, stat.st_ino)
            if identity != self._identity or stat.st_size < self.offset:
                self._identity, self.offset, self.rows = identity, 0, []
                self.bad_line_numbers, self.lines = [], 0
            if stat.st_size == self.offset:
                return []
            handle.seek(self.offset)
            data = handle.read(stat.st_size - self.offset)
        end = data.rfind(b"\n") + 1  # 0: not even one whole line yet
        rows, bad = parse_jsonl(data)  # its whole lines: up to `end`
        self.offset += end
        self.bad_line_numbers += [self.lines + number for number in bad]
        self.lines += data.count(b"\n", 0, end)
        self.rows.extend(rows)
        return rows

    @property
    def bad_lines(self) -> int:
        return len(self.bad_line_numbers)

    @property
    def finished(self) -> dict | None:
        """The `finished` row when the last training segment has ended, else None. Only the
        rows read since the last call are looked at (a follower asks at every check)."""
        rows, (seen_rows, seen, finished) = self.rows, self._finished_seen
        if seen_rows is not rows or seen > len(rows):  # read again from the start
            seen, finished = 0, None
        for row in rows[seen:]:
            event = row.get("event")
            if event == "finished":
                finished = row
            elif event in ("started", "resumed"):
                finished = None
        self._finished_seen = (rows, len(rows), finished)
        return finished

    def snapshots(self) -> list[Snapshot]:
        try:
            entries = list(os.scandir(self.folder / layout.SNAPSHOTS_DIR))
        except FileNotFoundError:
            return []
        found = []
        for entry in entries:
            step = layout.snapshot_step(entry.name)
            if step is not None and entry.is_dir():
                found.append(Snapshot(step, Path(entry.path)))
        return sorted(found, key=lambda s: s.step)

    # -- views of the rows -------------------------------------------------------------------

    def curves(self) -> Curves:
        return curves_from_rows(self.rows)

    def history(self, upto: int | None = None) -> list[dict]:
        return history_from_rows(self.rows, upto)

    def open_snapshot(self, step: int, load_data: bool = True):
        """The Workspace of the snapshot at `step`, with the run's curves up to that step."""
        from explorer.training.checkpoint import load_checkpoint

        path = layout.snapshot_dir(self.folder, step)
        if not path.is_dir():
            raise UserError(f"{path}: no such snapshot (deleted?)")
        workspace = load_checkpoint(path, load_data=load_data)
        self.read_new()
        workspace.history = self.history(upto=step)
        return workspace


def curves_from_rows(rows: list[dict]) -> Curves:
    """The plots' columns of these rows (a whole run's, or the rows a follower just read)."""
    steps, evals = live_rows(rows)
    return Curves(train=_columns(steps, TRAIN_KEYS), eval=_columns(evals, EVAL_KEYS))


def _columns(rows: list[dict], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """One float64 column per key (None and absent keys become NaN), "step" as int64."""
    if not rows:
        return {key: np.zeros(0, np.int64 if key == "step" else np.float64) for key in keys}
    pick = operator.itemgetter(*keys)
    try:  # one pass straight into the array (no list of tuples): RunWriter's rows have every key
        flat = itertools.chain.from_iterable(map(pick, rows))
        table = np.fromiter(flat, np.float64, count=len(rows) * len(keys)).reshape(len(rows), len(keys))
    except (KeyError, TypeError):  # a key missing, a None (np.array reads it as NaN)
        table = np.array([[row.get(key) for key in keys] for row in rows], dtype=np.float64)
    columns = {key: table[:, i] for i, key in enumerate(keys)}
    columns["step"] = columns["step"].astype(np.int64)
    return columns
