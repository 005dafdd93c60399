"""A progress bar that waits for the window's next frame.

QProgressBar.setValue repaints at once when the shown value moves, and so does setRange when it
resets the value; a repaint of one widget paints every dirty widget of the window with it. An
attribution's three progress steps during training each painted the whole window, 40 ms a time
(issue 37's GUI-thread profile); the status bar's bar did the same at each trainer restart. This
bar is drawn with the rest of the window's next frame instead.
"""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar


class FrameProgressBar(QProgressBar):
    def setValue(self, value: int) -> None:
        self.setUpdatesEnabled(False)
        super().setValue(value)
        self.setUpdatesEnabled(True)  # asks for an ordinary update

    def setRange(self, minimum: int, maximum: int) -> None:
        self.setUpdatesEnabled(False)
        super().setRange(minimum, maximum)
        self.setUpdatesEnabled(True)
