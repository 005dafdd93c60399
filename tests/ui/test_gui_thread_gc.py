"""Garbage cycles holding widgets are freed from the GUI thread's event loop only, never in the
middle of a Qt call that is wrapping a list of widgets (the suite once crashed in
QApplication.topLevelWidgets() that way), nor on a worker thread that happens to allocate."""

import gc
import subprocess
import sys
import threading

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel

from explorer.ui.gui_thread_gc import GuiThreadCollector

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
    # young objects past the threshold, as when the app goes on working: the timer collects them
    young = [[] for _ in range(2 * gc.get_threshold()[0])]
    qtbot.waitUntil(lambda: bool(destroyed_on))
    assert destroyed_on == [threading.get_ident()]
    del young


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
