"""Crash-safe files and folders: what a kill -9 or a power cut at any moment leaves behind.

* `replace_folder(target, write)`: `write` fills a staging folder beside `target`; its files and
  the folder are fsynced, then it replaces `target` in one atomic step (Linux: renameat2 with
  RENAME_EXCHANGE). Readers and survivors see the old folder or the new one, never a mix.
  Elsewhere two renames are needed; a kill between them leaves `.NAME.old`, which
  `existing_folder` reads and the next `replace_folder` puts back.
* `FolderLock(folder)`: one writer per folder, across processes. The kernel holds the lock
  (flock / msvcrt.locking), so a process that dies, however it dies, frees it; the pid written in
  the lock file only names the holder in the error message.
* `replace_file(path, write)` / `write_text_file`: an output file (an export, `evaluate --out`, a
  handout) is written as a new file beside its name and renamed over it, so a symlink planted at
  the name is replaced, never followed (nothing outside the folder is written), and a failure
  leaves what was there.
* `append_jsonl` / `JsonlAppender` / `read_jsonl` / `parse_jsonl`: one JSON object per line, each
  append one write() of whole lines (fsynced on request); every reader (RunReader too) parses with
  `parse_jsonl`, which skips a last line without its newline (a write cut short), and
  `repair_jsonl` trims it before appending goes on. `read_jsonl_skipping` leaves out a damaged
  line elsewhere too, and numbers it (a checkpoint's history: the caller says so).

Standard library only: checkpoints, run folders and the app's autosave all build on this.
"""

from __future__ import annotations

import ctypes
import errno
import json
import math
import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from explorer.errors import UserError

# -- fsync -----------------------------------------------------------------------------------------


def fsync_dir(folder: Path) -> None:
    """Make a folder's entries (new names, renames) durable. A no-op where folders cannot be
    opened (Windows): there the rename itself is as durable as it gets."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory
    finally:
        os.close(fd)


def fsync_tree(folder: Path) -> None:
    """fsync every file under `folder`, then every folder, deepest first."""
    for root, dirs, files in os.walk(folder, topdown=False):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(root))


# -- atomic folder replacement ---------------------------------------------------------------------


def _old_name(target: Path) -> Path:
    return target.parent / f".{target.name}.old"


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if sys.platform != "linux":
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc < 2.28, musl
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint)
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # the kernel or the filesystem cannot exchange: fall back to two renames
    raise OSError(code, os.strerror(code), str(b))


def existing_folder(target: Path) -> Path:
    """`target`, or the complete old copy a kill between two renames left beside it."""
    target = Path(target)
    old = _old_name(target)
    if not target.exists() and old.is_dir():
        return old
    return target


def _default_permissions(folder: Path) -> None:
    """mkdtemp makes a private folder; a saved folder gets the permissions of any new one."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for path in folder.rglob("*"):
        path.chmod((0o777 if path.is_dir() else 0o666) & ~umask)


def _recover(target: Path) -> None:
    """Put back what an interrupted replace left (call with the folder's lock held)."""
    old = _old_name(target)
    if old.exists():
        if target.exists():
            shutil.rmtree(old, ignore_errors=True)  # the new folder made it into place
        else:
            old.rename(target)  # killed between the two renames: the old one is complete
    # listed and matched by hand: Path.glob keeps each new pattern in pathlib's selector cache
    # (128 of them, with their compiled regexes), one per snapshot name, which a long training's
    # object count showed as growth (benchmarks/bench_soak.py)
    staging = f".{target.name}.new-"
    for debris in target.parent.iterdir() if target.parent.is_dir() else ():
        if debris.name.startswith(staging):
            shutil.rmtree(debris, ignore_errors=True)  # a staging folder nobody finished


def replace_folder(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Fill a new folder with `write(staging)` and put it at `target` atomically.

    If `write` raises (a full disk, a bug) or the process dies, `target` is unchanged. Hold
    `FolderLock(target)` around the call when another process might write the same folder."""
    target = Path(target)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _recover(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=parent))
    try:
        write(staging)
        _default_permissions(staging)
        fsync_tree(staging)
        if not target.exists():
            staging.rename(target)
        elif _exchange(staging, target):
            pass  # staging now holds the old folder, removed below
        else:
            old = _old_name(target)
            target.rename(old)
            try:
                staging.rename(target)
            except BaseException:
                old.rename(target)
                raise
            staging = old
        fsync_dir(parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # the debris of a failure, or the old folder
    return target


# -- files replaced by name ------------------------------------------------------------------------


def _default_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def replace_file(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Write `path` by replacing its name in its folder: `write(temporary)` fills a new file
    beside it, which is then renamed over the name (os.replace). Whatever the name held, a file or
    a symlink to anywhere, is replaced itself; no link is followed. A failure removes the new file
    and leaves what was there; an OSError is a one-line UserError naming `path`."""
    path = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None
    os.close(fd)
    temporary = Path(name)
    try:
        write(temporary)
        temporary.chmod(_default_file_mode())  # mkstemp's file is private; an output is not
        os.replace(temporary, path)
    except BaseException as exc:
        temporary.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None
        raise
    return path


def write_text_file(path: str | Path, text: str) -> Path:
    """`path` holding `text` (UTF-8), written by `replace_file`."""
    return replace_file(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def replaced_note(paths: Iterable[Path], before: set[str]) -> str | None:
    """"replaced 3 existing files in FOLDER" for the `paths` written whose names were among
    `before` (the folder's names before writing); None when none was."""
    paths = list(paths)
    replaced = [p for p in paths if p.name in before]
    if not replaced:
        return None
    where = replaced[0].parent
    files = "file" if len(replaced) == 1 else "files"
    return f"replaced {len(replaced)} existing {files} in {where}"


# -- one writer per folder -------------------------------------------------------------------------

_held: dict[str, list] = {}  # lock path -> [FolderLock, depth]: re-entrant within a process
_held_guard = threading.Lock()


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


class FolderLock:
    """Only one process writes `folder` at a time: `with FolderLock(folder): ...`.

    The lock file `.NAME.lock` sits beside the folder (a folder replaced as a whole cannot hold
    its own lock). A second process gets a one-line UserError naming the holder; a lock file left
    by a dead process is stale and taken over, since the kernel freed its lock."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        where = Path(os.path.abspath(folder))  # "." and "run/" name their folder too
        self.path = where.parent / f".{where.name}.lock"
        self._fd: int | None = None

    def _key(self) -> str:
        return os.path.realpath(self.path)

    def acquire(self) -> FolderLock:
        with _held_guard:
            entry = _held.get(self._key())
            if entry is not None:  # this process holds it already (a save inside a run)
                entry[1] += 1
                return self
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                if not _try_lock(fd):
                    holder = _holder(fd)
                    os.close(fd)
                    raise UserError(
                        f"{self.folder}: another explorer process ({holder}) is writing this "
                        "folder; wait for it to finish or choose another folder"
                    )
                try:  # the holder before us may have removed the file after we opened it
                    same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
            self._fd = fd
            _held[self._key()] = [self, 1]
        return self

    def release(self) -> None:
        with _held_guard:
            entry = _held.get(self._key())
            if entry is None:
                return
            entry[1] -= 1
            if entry[1]:
                return
            del _held[self._key()]
            owner = entry[0]
            try:
                os.unlink(owner.path)  # while still locked, so no one locks a file we remove
            except OSError:
                pass
            os.close(owner._fd)
            owner._fd = None

    def holder(self) -> tuple[int, str] | None:
        """(pid, host) the lock file names, without locking it; None when there is none. A
        process that died leaves its file: check the pid (writer_alive in explorer/runs)."""
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        pid, _, host = text.strip().partition(" ")
        return (int(pid), host) if pid.isdigit() else None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()


def _holder(fd: int) -> str:
    """`pid 1234 on host` from the lock file, for the message."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        pid, _, host = os.read(fd, 200).decode("utf-8", "replace").strip().partition(" ")
    except OSError:
        return "unknown pid"
    if not pid.isdigit():
        return "unknown pid"
    return f"pid {pid}" + (f" on {host}" if host and host != socket.gethostname() else "")


# -- append-only JSON lines ------------------------------------------------------------------------


def json_line(row: dict[str, Any]) -> bytes:
    """One row as a line; NaN and infinity are not JSON and become null."""
    row = {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}
    return (json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """A new file of JSON lines, fsynced."""
    with open(path, "wb") as out:
        out.write(b"".join(json_line(row) for row in rows))
        out.flush()
        os.fsync(out.fileno())


class JsonlAppender:
    """A JSON-lines file held open for appending (a run's metrics.jsonl). Each `append` is one
    write() of whole lines to an O_APPEND descriptor, so a reader sees each row entirely or not
    at all: a last line without its newline is skipped by `read_jsonl` and `parse_jsonl`."""

    def __init__(self, path: Path) -> None:
        # a symlink planted at the name is refused, not followed out of the folder
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        try:
            self.fd: int | None = os.open(path, flags, 0o644)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise UserError(f"{path}: is a symbolic link; rows are appended to a file of the "
                            "folder's own, never through a link") from None

    def append(self, rows: Iterable[dict[str, Any]], sync: bool = False) -> None:
        """fsync too when `sync` (readers see the rows at once either way; only a power cut may
        lose rows that were not synced)."""
        view = memoryview(b"".join(json_line(row) for row in rows))
        while view:
            view = view[os.write(self.fd, view):]
        if sync:
            os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def append_jsonl(path: Path, rows: Iterable[dict[str, Any]], sync: bool = True) -> None:
    """Append whole lines in one write, fsynced unless `sync` is False (see JsonlAppender)."""
    appender = JsonlAppender(path)
    try:
        appender.append(rows, sync)
    finally:
        appender.close()


def repair_jsonl(path: Path) -> None:
    """Cut a half-written last line, so appending can go on after a crash."""
    try:
        with open(path, "rb+") as file:
            data = file.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                file.truncate(end)
                file.flush()
                os.fsync(file.fileno())
    except FileNotFoundError:
        pass


def parse_jsonl(block: bytes) -> tuple[list[dict[str, Any]], list[int]]:
    """The rows of `block`'s whole lines (a last line without its newline is left out), and the
    1-based numbers of the lines that are not JSON objects."""
    end = block.rfind(b"\n")  # -1: not one whole line
    body = block[:end].rstrip(b"\n") if end > 0 else b""
    if not body:
        return [], []
    try:  # one parse for the whole block: several times faster than a loads() per line
        rows = json.loads(b"[%b]" % body.replace(b"\n", b","))
        if all(isinstance(row, dict) for row in rows):
            return rows, []
    except ValueError:  # a bad line, a blank line: line by line below
        pass
    rows, bad = [], []
    for number, line in enumerate(body.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad.append(number)
    return rows, bad


def read_jsonl_skipping(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """(every complete row of a JSON-lines file, the 1-based numbers of its other lines, which
    are left out); a torn last line is left out unnumbered, a missing file has no rows."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_jsonl(data)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete row of a JSON-lines file; a torn last line is left out, any other bad line
    is a UserError naming it."""
    rows, bad = read_jsonl_skipping(path)
    if bad:
        raise UserError(f"{path}:{bad[0]}: not a JSON object")
    return rows
