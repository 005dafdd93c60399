"""What the soak benchmark (bench_soak.py) measures: resident memory, Python objects by type,
QObjects, widgets and scene items, and where the GUI thread stalls."""

from __future__ import annotations

import collections
import gc
import os
import sys
import time


def resident_mb() -> float:
    """The process's resident set size (Linux /proc; psutil elsewhere if it is installed)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import psutil

        return psutil.Process().memory_info().rss / 2**20


def trimmed_resident_mb() -> float | None:
    """Resident memory after glibc's malloc_trim(0) hands free heap pages back to the system:
    what stays is in use (or fragmented). None off glibc."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return resident_mb()


def malloc_heap_mb() -> dict[str, float]:
    """glibc's own account of its heap over all arenas (mallinfo2, glibc >= 2.33): bytes handed
    out and not yet freed ("in use", mmapped blocks included), and bytes freed but kept by the
    allocator. Resident memory that grows while "in use" stays flat is the allocator's, not a
    leak. {} off glibc. Reading it changes nothing (unlike malloc_trim)."""
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
            "fordblks", "keepcost")]

    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return {}
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return {"heap_in_use_mb": round((info.uordblks + info.hblkhd) / 2**20, 1),
            "heap_free_mb": round(info.fordblks / 2**20, 1)}


def count_qobjects(app, window) -> dict[str, int]:
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QApplication, QGraphicsView

    widgets = QApplication.allWidgets()
    qobjects = window.findChildren(QObject)
    return {
        "window_qobjects": len(qobjects),
        "qobject_classes": collections.Counter(o.metaObject().className() for o in qobjects),
        "app_qobjects": len(app.findChildren(QObject)),
        "widgets": len(widgets),
        "scene_items": sum(len(w.scene().items()) for w in widgets
                           if isinstance(w, QGraphicsView) and w.scene() is not None),
    }


class StallWatch:
    """A watchdog thread: whenever the GUI thread has not ticked for STALL_MS, it records where
    the GUI thread is (innermost frames of this project, pyqtgraph or Qt's Python side), to find
    what makes the timer late (--stalls)."""

    STALL_MS = 40

    def __init__(self, run: "SoakRun") -> None:
        import threading

        self.run = run
        self.main = threading.main_thread().ident
        self.where: collections.Counter = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        import traceback

        while not self._stop.wait(0.005):
            if (time.perf_counter() - self.run._last_tick) * 1000 < self.STALL_MS:
                continue
            frame = sys._current_frames().get(self.main)
            if frame is None:
                continue
            frames = traceback.extract_stack(frame)
            if any(f.name == "sample" and "bench_soak" in f.filename for f in frames):
                continue  # a sample's own gc pass, left out of the lateness too
            stack = [f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in frames
                     if "bench_soak" not in f.filename]
            self.where[" < ".join(reversed(stack[-4:])) or "Qt itself (no Python frame)"] += 1


def type_counts() -> tuple[collections.Counter, int]:
    """Live Python objects by type name, and the wrappers of deleted Qt objects apart: counting
    QObjects with findChildren() makes a wrapper for each, which its parent's wrapper keeps after
    the C++ object is gone (a QLabel's text document, replaced by its next rich text). Those are
    the measurement's own, so they are counted on their own."""
    import shiboken6

    counts, dead = collections.Counter(), 0
    for o in gc.get_objects():
        if issubclass(type(o), shiboken6.Shiboken.Object) and not shiboken6.isValid(o):
            dead += 1
        else:
            counts[type(o).__name__] += 1
    return counts, dead
