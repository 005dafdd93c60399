"""FrameProgressBar: a new value is painted with the window's next frame, not at once."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QProgressBar

from explorer.ui.progress_bar import FrameProgressBar


def shown(qtbot, count_events, bar: QProgressBar):
    qtbot.addWidget(bar)
    bar.setRange(0, 100)
    paints = count_events(bar, QEvent.Type.Paint)
    bar.show()
    qtbot.waitUntil(lambda: paints.count >= 1)  # its first frame is drawn
    paints.count = 0
    return paints


def test_qt_own_bar_paints_inside_set_value_and_a_resetting_set_range(qtbot, count_events):
    """What FrameProgressBar avoids: a plain QProgressBar paints before these calls return."""
    bar = QProgressBar()
    paints = shown(qtbot, count_events, bar)
    bar.setValue(50)
    assert paints.count >= 1
    paints.count = 0
    bar.setRange(60, 100)  # the value falls outside: Qt resets it, and repaints
    assert paints.count >= 1


def test_the_frame_bar_paints_its_new_value_with_the_next_frame(qtbot, count_events):
    bar = FrameProgressBar()
    paints = shown(qtbot, count_events, bar)
    bar.setValue(50)
    assert paints.count == 0 and bar.value() == 50
    bar.setRange(60, 100)
    assert paints.count == 0 and bar.value() < 60  # reset, not yet painted
    qtbot.waitUntil(lambda: paints.count >= 1)
    assert bar.updatesEnabled()
