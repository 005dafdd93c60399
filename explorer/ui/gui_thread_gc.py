"""Cyclic garbage is collected from the GUI thread's event loop only.

Python's cycle collector runs at whatever allocation crosses a threshold. Inside a Qt call that
returns a list of widgets (`QApplication.topLevelWidgets()`, `allWidgets()`, `findChildren`) the
list of C++ pointers is taken first and each is then wrapped for Python; wrapping allocates, a
collection can start there and free a parentless widget held only by a garbage cycle (pyqtgraph's
items make many), and the next pointer in the list is a freed widget: a segfault. The suite died
that way once in `topLevelWidgets()`; tests/ui/test_gui_thread_gc.py builds the case. A worker
thread's allocations (training allocates a lot) start collections too, at moments the GUI thread
does not choose. So while the app runs, automatic collection is off and a timer in the event loop
collects the generation CPython's own thresholds say is due, where no such list is being built.
"""

from __future__ import annotations

import contextlib
import gc

from PySide6.QtCore import QObject, QTimer

# Often enough that the young generation never holds more than a tenth of a second's garbage.
INTERVAL_MS = 100

# CPython's rule for the oldest generation, which an explicit gc.collect(2) skips: collect it only
# when the objects moved into it since its last collection are over a quarter of those it kept
# then. A full collection walks every object the process holds (0.2-0.3 s with the window and a
# model open), so without the rule the GUI would stall every ten young-generation collections.
_long_lived = {"total": -1, "pending": 0}


def collect_due() -> int:
    """Collect what CPython's automatic collection would collect now: the oldest generation whose
    count is over its threshold, the oldest of all only by the rule above. Returns the number of
    objects freed."""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    if _long_lived["total"] < 0:
        _long_lived["total"] = len(gc.get_objects(generation=2))
    if counts[2] > thresholds[2] and _long_lived["pending"] > _long_lived["total"] // 4:
        freed = gc.collect(2)
        _long_lived["total"], _long_lived["pending"] = len(gc.get_objects(generation=2)), 0
        return freed
    if counts[1] > thresholds[1]:
        young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
        freed = gc.collect(1)
        _long_lived["pending"] += max(0, young - freed)  # the survivors, now long-lived
        return freed
    if counts[0] > thresholds[0]:
        return gc.collect(0)
    return 0


class GuiThreadCollector(QObject):
    """Owned by the application: while started, automatic collection is off and the GUI thread
    collects on a timer. Stopping (the app quitting, e.g. after `explorer.show` returns in a
    plain Python session) turns automatic collection back on as it was."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.setObjectName("gui_thread_gc")
        self._timer = QTimer(self)
        self._timer.setInterval(INTERVAL_MS)
        self._timer.timeout.connect(collect_due)
        self._was_enabled = True

    def start(self) -> None:
        if not self._timer.isActive():
            self._was_enabled = gc.isenabled()
            gc.disable()
            self._timer.start()

    def stop(self) -> None:
        if self._timer.isActive():
            self._timer.stop()
            collect_due()
            if self._was_enabled:
                gc.enable()


def collect_on_gui_thread(app) -> GuiThreadCollector:
    """Start (once per application) collecting garbage on `app`'s thread only."""
    collector = app.findChild(GuiThreadCollector, "gui_thread_gc")
    if collector is None:
        collector = GuiThreadCollector(app)
        app.aboutToQuit.connect(collector.stop)
    collector.start()
    return collector


@contextlib.contextmanager
def collecting_on_gui_thread(app):
    """collect_on_gui_thread for a stretch of work that has no `exec()` of its own (the CLI's
    headless export); automatic collection is as it was afterwards unless the app collects."""
    existing = app.findChild(GuiThreadCollector, "gui_thread_gc")
    running = existing is not None and existing._timer.isActive()
    collector = collect_on_gui_thread(app)
    try:
        yield collector
    finally:
        if not running:
            collector.stop()
