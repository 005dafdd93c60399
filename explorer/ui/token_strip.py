"""A row of clickable tokens, wrapped to the widget's width: a decoded output whose every token
can be picked (the compare panel's cards: "why this token?").

    strip = TokenStrip()
    strip.set_tokens(["the", "cat", "<eos>"])
    strip.token_clicked.connect(lambda index: ...)
    strip.token_rect(1)      # where token 1 is drawn (tests click there)

Drawn by hand rather than as rich-text links: a QLabel does not say where its links are, and a
widget per token would be dozens of widgets per card.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

GAP = 4  # between chips, both ways
PAD = 4  # inside a chip, left and right


class TokenStrip(QWidget):
    token_clicked = Signal(int)  # index into the tokens

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tokens: list[str] = []
        self.hovered = -1
        self.setMouseTracking(True)
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)  # as wide as the card: a long output never widens the panel

    def set_tokens(self, tokens: list[str]) -> None:
        self.tokens = [str(t) for t in tokens]
        self.hovered = -1
        self.updateGeometry()
        self.update()

    # -- layout ---------------------------------------------------------------------------------

    def _rects(self, width: int) -> list[QRect]:
        """Each token's chip, left to right, wrapping at `width`."""
        metrics = self.fontMetrics()
        height = metrics.height() + 2
        rects, x, y = [], 0, 0
        for token in self.tokens:
            chip = metrics.horizontalAdvance(token) + 2 * PAD
            if x > 0 and x + chip > width:
                x, y = 0, y + height + GAP
            rects.append(QRect(x, y, chip, height))
            x += chip + GAP
        return rects

    def token_rect(self, index: int) -> QRect:
        return self._rects(self.width())[index]

    def index_at(self, point) -> int:
        return next((k for k, rect in enumerate(self._rects(self.width())) if rect.contains(point)), -1)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        rects = self._rects(width)
        return rects[-1].bottom() + 1 if rects else 0

    def sizeHint(self) -> QSize:
        return QSize(200, self.heightForWidth(200))

    # -- drawing and clicks ---------------------------------------------------------------------

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        palette = self.palette()
        for index, (token, rect) in enumerate(zip(self.tokens, self._rects(self.width()))):
            hovered = index == self.hovered
            painter.setPen(palette.color(QPalette.ColorRole.Mid))
            painter.setBrush(palette.color(QPalette.ColorRole.Highlight if hovered else QPalette.ColorRole.Base))
            painter.drawRoundedRect(rect.adjusted(0, 0, -1, -1), 3, 3)
            painter.setPen(palette.color(QPalette.ColorRole.HighlightedText if hovered else QPalette.ColorRole.Text))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, token)

    def mouseMoveEvent(self, event) -> None:
        index = self.index_at(event.position().toPoint())
        if index != self.hovered:
            self.hovered = index
            self.setCursor(Qt.CursorShape.PointingHandCursor if index >= 0 else Qt.CursorShape.ArrowCursor)
            self.update()

    def leaveEvent(self, event) -> None:
        self.hovered = -1
        self.update()
        super().leaveEvent(event)

    def mouseReleaseEvent(self, event) -> None:
        index = self.index_at(event.position().toPoint())
        if event.button() == Qt.MouseButton.LeftButton and index >= 0:
            self.token_clicked.emit(index)
