"""FrameProgressBar: a new value is painted with the window's next frame, not at once."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QProgressBar

from explorer.ui.progress_bar import FrameProgressBar


class PaintCounter(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.paints = 0

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.paints += 1
        return False


def shown(qtbot, bar: QProgressBar) -> PaintCounter:
    qtbot.addWidget(bar)
    bar.setRange(0, 100)
    counter = PaintCounter()
    bar.installEventFilter(counter)
    bar.show()
    qtbot.waitUntil(lambda: counter.paints >= 1)  # its first frame is drawn
    counter.paints = 0
    return counter


def test_qt_own_bar_paints_inside_set_value(qtbot):
    """What FrameProgressBar avoids: a plain QProgressBar paints before setValue returns."""
    bar = QProgressBar()
    counter = shown(qtbot, bar)
    bar.setValue(50)
    assert counter.paints >= 1


def test_the_frame_bar_paints_its_new_value_with_the_next_frame(qtbot):
    bar = FrameProgressBar()
    counter = shown(qtbot, bar)
    bar.setValue(50)
    assert counter.paints == 0 and bar.value() == 50
    qtbot.waitUntil(lambda: counter.paints >= 1)
    assert bar.updatesEnabled()
