"""Runs: the folder a training writes as it goes, and the readers that open or follow it.

    DIR/config.json            the checkpoint's config (model, training, data spec, step) and a
                               "run" section: seed, versions, data hashes, how the model was built
    DIR/metrics.jsonl          append-only: one JSON row per step, per evaluation, per event
    DIR/snapshots/step-NNNNNN/ a full checkpoint every --snapshot-every steps
    DIR/model.safetensors ...  the latest checkpoint, as `explorer train` always wrote
    DIR/tensorboard/           TensorBoard scalars (with the [tensorboard] extra)

DIR/../.DIR.lock, beside the folder, is its explorer.durable.FolderLock while a process writes the
run (it names the pid and host). The folder is the contract between a trainer and every viewer:
a reader needs nothing else.
Qt-free; the app's file watcher calls `RunFollower.notify()`.
"""

from explorer.runs.follow import RunFollower, RunState
from explorer.runs.layout import (
    METRICS_FILE, RUN_FORMAT, SNAPSHOTS_DIR, snapshot_dir, writer_alive,
)
from explorer.runs.reader import Curves, RunReader, Snapshot
from explorer.runs.writer import RunWriter

__all__ = [
    "Curves", "METRICS_FILE", "RUN_FORMAT", "RunFollower", "RunReader", "RunState", "RunWriter",
    "SNAPSHOTS_DIR", "Snapshot", "snapshot_dir", "writer_alive",
]
