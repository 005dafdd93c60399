"""LiveText: text that changes while the app trains, without laying the window out again."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QVBoxLayout, QWidget

from explorer.ui.live_text import LiveText


def window_with(qtbot, count_events, label: QWidget):
    """A main window with one dock whose panel holds `label`, laid out and idle."""
    window = QMainWindow()
    qtbot.addWidget(window)
    window.setCentralWidget(QWidget())
    panel = QWidget()
    QVBoxLayout(panel).addWidget(label)
    dock = QDockWidget("panel")
    dock.setObjectName("panel")
    dock.setWidget(panel)
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, dock)
    window.resize(600, 400)
    window.show()
    qtbot.waitExposed(window)
    requests = count_events(window, QEvent.Type.LayoutRequest)
    qtbot.waitUntil(lambda: not window.layout().isEmpty())
    return window, requests


def settle(qtbot) -> None:
    from PySide6.QtWidgets import QApplication

    for _ in range(5):
        QApplication.processEvents()


def test_a_qlabel_lays_the_main_window_out_at_every_new_text(qtbot, count_events):
    """What LiveText avoids: each setText of a QLabel in a dock re-lays out the main window."""
    window, requests = window_with(qtbot, count_events, QLabel("step: 1"))
    settle(qtbot)
    requests.count = 0
    label = window.findChild(QLabel)
    for step in range(2, 6):
        label.setText(f"step: {step}")
        settle(qtbot)
    assert requests.count >= 4


def test_live_text_only_repaints(qtbot, count_events):
    live = LiveText("step: 1", widest="step: 0000000")
    _window, requests = window_with(qtbot, count_events, live)
    settle(qtbot)
    requests.count = 0
    hint = live.sizeHint()
    for step in range(2, 6):
        live.setText(f"step: {step}")
        settle(qtbot)
    assert requests.count == 0
    assert live.text() == "step: 5" and live.sizeHint() == hint  # the size never follows the text
    assert live.accessibleName() == "step: 5"
    assert hint.width() >= live.fontMetrics().horizontalAdvance("step: 0000000")


def test_live_text_takes_its_lines_height_and_follows_a_new_font(qtbot):
    two = LiveText("a run's state that may wrap onto a second line", lines=2)
    qtbot.addWidget(two)
    spacing = two.fontMetrics().lineSpacing()
    assert two.sizeHint().height() == 2 * spacing + 2
    font = two.font()
    font.setPointSizeF(2 * font.pointSizeF())
    two.setFont(font)  # presentation mode
    assert two.sizeHint().height() == 2 * two.fontMetrics().lineSpacing() + 2 > 2 * spacing + 2
