"""Garbage cycles holding widgets are freed from the GUI thread's event loop only, never in the
middle of a Qt call that is wrapping a list of widgets (the suite once crashed in
QApplication.topLevelWidgets() that way), nor on a worker thread that happens to allocate."""

import gc
import subprocess
import sys
import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QLabel

from explorer.ui import gui_thread_gc
from explorer.ui.gui_thread_gc import (
    GuiThreadCollector,
    collect_due,
    collecting_on_gui_thread,
)

# Popup windows made in C++ (no Python wrapper yet, so wrapping them allocates) among parentless
# labels held only by garbage cycles, and a collection due at every allocation. With automatic
# collection on ("plain"), this dies with SIGSEGV inside topLevelWidgets() on this project's
# machines: a collection while the list is wrapped frees labels the list still points at.
WIDGET_LIST_DURING_GARBAGE = """
import gc, sys
from PySide6.QtWidgets import QApplication, QComboBox, QLabel
if sys.argv[1] == "app":
    from explorer.ui.app import create_application
    app = create_application()
else:
    app = QApplication([])
combos = []
for _ in range(300):
    combo = QComboBox()
    combo.addItems(["a", "b"])
    combo.showPopup()
    combo.hidePopup()
    combos.append(combo)
for _ in range(300):
    label = QLabel("garbage")
    label.cycle = label
del label
gc.set_threshold(1)
print(len(QApplication.topLevelWidgets()))
"""


def test_listing_widgets_while_cycles_hold_widgets_does_not_crash():
    result = subprocess.run([sys.executable, "-c", WIDGET_LIST_DURING_GARBAGE, "app"],
                            check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.split()[-1]) == 900


def _widget_in_a_garbage_cycle(destroyed_on: list[int]) -> None:
    widget = QLabel("only the cycle collector can free me")  # parentless: Python owns it
    widget.cycle = widget
    widget.destroyed.connect(lambda: destroyed_on.append(threading.get_ident()),
                             Qt.ConnectionType.DirectConnection)


def _allocate_like_a_worker() -> None:
    """Enough surviving containers to cross every generation's threshold many times over."""
    kept = [[] for _ in range(300_000)]
    del kept


def test_a_worker_allocating_leaves_the_cycle_to_the_event_loop(qapp, qtbot):
    assert not gc.isenabled()  # the collector (tests/conftest.py's qapp, as the app's) has it off
    destroyed_on: list[int] = []
    _widget_in_a_garbage_cycle(destroyed_on)
    worker = threading.Thread(target=_allocate_like_a_worker)
    worker.start()
    worker.join()
    assert destroyed_on == []
    young: list[list] = []

    def working() -> bool:
        """The app goes on allocating (freeing old objects lowers the young count, so one batch
        might not cross the threshold); the timer then collects the young generation."""
        young.extend([] for _ in range(gc.get_threshold()[0]))
        return bool(destroyed_on)

    qtbot.waitUntil(working)
    assert destroyed_on == [threading.get_ident()]


def test_stopping_restores_automatic_collection(qapp):
    gc.enable()
    try:
        owner = QObject()
        collector = GuiThreadCollector(owner)
        collector.start()
        assert not gc.isenabled()
        collector.stop()
        assert gc.isenabled()
    finally:
        gc.disable()


def test_the_oldest_generation_waits_for_a_quarter_more_long_lived_objects(qapp):
    """CPython's own rule: a full collection (0.2-0.3 s with a window open) only once the objects
    promoted since the last one are over a quarter of those it kept."""
    started: list[int] = []

    def seen(phase, info):
        if phase == "start":
            started.append(info["generation"])

    thresholds = gc.get_threshold()
    gc.collect()
    gui_thread_gc._long_lived.update(total=-1, pending=0)
    gc.set_threshold(1, 0, 0)  # every generation's count is over its threshold at once
    gc.callbacks.append(seen)
    try:
        few = [[] for _ in range(10)]
        for _ in range(4):
            collect_due()
        assert started and 2 not in started  # young and middle ones only
        kept = gui_thread_gc._long_lived["total"]
        many = [[] for _ in range(kept // 4 + 1000)]  # made long-lived by the next collections
        for _ in range(4):
            collect_due()
        assert 2 in started
        assert gui_thread_gc._long_lived["pending"] == 0
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*thresholds)
    del few, many


def test_a_stretch_of_work_restores_collection_only_where_it_started_the_collector(qapp):
    """The CLI's headless export has no exec() to quit: automatic collection comes back after it,
    while an app that already collects (the suite's qapp, as the app's) keeps collecting."""
    with collecting_on_gui_thread(qapp):
        assert not gc.isenabled()
    assert not gc.isenabled()  # the qapp's collector was running before: it still is
    class AppWithoutCollector(QObject):
        aboutToQuit = Signal()

    other = AppWithoutCollector()
    gc.enable()
    try:
        with collecting_on_gui_thread(other):
            assert not gc.isenabled()
        assert gc.isenabled()
    finally:
        gc.disable()
