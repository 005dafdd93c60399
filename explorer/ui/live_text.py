"""LiveText: a line (or two) of text that changes while the app trains (a step, a speed, a run's
state), in a box whose size never follows its text.

A QLabel's setText asks its parents to lay out again, and from inside a dock that ends with the
main window laying out every dock (and making a geometry animation for each): about four times a
second while the app trained, from the status bar's and the timeline's step labels alone (issue
37's GUI-thread profile). LiveText only repaints. It is `widest` (a sample of the longest text it
will show) wide and `lines` lines high; a longer text is cut with "…", or wrapped when lines > 1.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

LEFT = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter


class LiveText(QWidget):
    def __init__(self, text: str = "", widest: str = "", lines: int = 1,
                 alignment: Qt.AlignmentFlag = LEFT, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text, self._widest, self._lines, self._alignment = text, widest, lines, alignment
        self.setAccessibleName(text)  # what a QLabel tells a screen reader
        # the height is the size hint's (no explicit minimum or maximum: presentation mode puts
        # back the minimum sizes it found)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self.setAccessibleName(text)
            self.update()  # a repaint only: the size stays

    def wordWrap(self) -> bool:  # as a QLabel answers: more than one line wraps
        return self._lines > 1

    def sizeHint(self) -> QSize:
        return QSize(self.fontMetrics().horizontalAdvance(self._widest) + 4, self._height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self._height())

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        rect = self.contentsRect().adjusted(1, 0, -1, 0)
        if self._lines == 1:
            shown = self.fontMetrics().elidedText(self._text, Qt.TextElideMode.ElideRight, rect.width())
            painter.drawText(rect, int(self._alignment), shown)
        else:
            painter.drawText(rect, int(self._alignment | Qt.TextFlag.TextWordWrap), self._text)

    def _height(self) -> int:  # a new font (presentation mode) lays out anew: QWidget's own doing
        return self._lines * self.fontMetrics().lineSpacing() + 2
