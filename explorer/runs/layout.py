"""Names inside a run folder, whether a live process writes it (its FolderLock), and what a run
records about where it came from (versions, data hashes). Imports nothing heavy: viewers use
this too."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
from pathlib import Path

from explorer.history import CONFIG_FILE, SNAPSHOTS_DIR  # noqa: F401 - layout.CONFIG_FILE: the run's names

RUN_FORMAT = "sequence-model-explorer/run/1"
METRICS_FILE = "metrics.jsonl"
TENSORBOARD_DIR = "tensorboard"
LATEST_STAGING = ".latest.new"  # the next top-level checkpoint, complete before it moves up
SNAPSHOT_PREFIX = "step-"


def snapshot_dir(folder: str | Path, step: int) -> Path:
    return Path(folder) / SNAPSHOTS_DIR / f"{SNAPSHOT_PREFIX}{step:06d}"


def snapshot_step(name: str) -> int | None:
    """The step of a `step-NNNNNN` folder name; None for anything else (e.g. a save in progress)."""
    if not name.startswith(SNAPSHOT_PREFIX):
        return None
    digits = name[len(SNAPSHOT_PREFIX):]
    return int(digits) if digits.isdigit() else None


def versions() -> dict[str, str]:
    import torch

    from explorer import __version__

    return {"explorer": __version__, "torch": torch.__version__,
            "python": platform.python_version()}


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_files(spec) -> dict[str, str]:
    """Every file a DataSpec reads -> its sha256 (a task has none: its data is code and a seed)."""
    names = ("text", "tsv", "src", "tgt", "val_src", "val_tgt")
    paths = [getattr(spec, name) for name in names if getattr(spec, name, None)]
    return {str(path): file_sha256(path) for path in paths}


def splits_sha256(splits) -> str:
    """A hash of the examples themselves, so a task whose generator changed is caught too."""
    digest = hashlib.sha256()
    for name in ("train", "val"):
        for source, target in getattr(splits, name):
            digest.update(f"{source}\t{target}\n".encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


# -- is the run being written? ---------------------------------------------------------------


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def writer_alive(folder: str | Path) -> bool | None:
    """True when a live process on this host holds the run's FolderLock, False when none does
    (no lock file, or its process is gone), None when the holder is on another host and cannot
    be checked. Reads the lock file's pid; never takes the lock, which would race the writer."""
    from explorer.durable import FolderLock

    holder = FolderLock(folder).holder()
    if holder is None:
        return False
    pid, host = holder
    if host and host != socket.gethostname():
        return None
    return _pid_alive(pid)
