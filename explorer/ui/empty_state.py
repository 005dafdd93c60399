"""A view with nothing to show says why, in one line, in place of its empty axes.

    self.traces = EmptyState(plot_widget, "Drag across the tokens above to pick units.")
    layout.addWidget(self.traces)
    self.traces.show_view()                 # there is data: the plot
    self.traces.show_message("No model.")   # there is none: the reason, and no axes
    self.traces.set_message(reason_or_none)  # either, from one value

`EmptyState` stacks the view and a centred label; exports ask `empty` and leave an empty view out
(an export of a view with nothing in it would be a figure of empty axes).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QStackedWidget, QWidget


class EmptyState(QStackedWidget):
    def __init__(self, view: QWidget, message: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.label = QLabel()
        self.label.setObjectName("emptyState")
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setWordWrap(True)  # one line where the view is wide enough; never cut
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.addWidget(view)
        self.addWidget(self.label)
        if message:
            self.show_message(message)

    # The view's size hints, whichever is shown: a splitter first laid out around the word-wrapped
    # message (its height-for-width) gave the view a third less room once it came back (the
    # Examples panel's length plot: 42 px high at 1920 x 1080).
    def hasHeightForWidth(self) -> bool:
        return self.view.hasHeightForWidth()

    def sizeHint(self):
        return self.view.sizeHint()

    @property
    def empty(self) -> bool:
        return self.currentWidget() is self.label

    @property
    def message(self) -> str:
        return self.label.text() if self.empty else ""

    def show_message(self, message: str) -> None:
        self.label.setText(message)
        self.label.setToolTip(message)
        self.setCurrentWidget(self.label)

    def show_view(self) -> None:
        self.setCurrentWidget(self.view)

    def set_message(self, message: str | None) -> None:
        """The message, or the view when `message` is None or ""."""
        if message:
            self.show_message(message)
        else:
            self.show_view()


def no_curves_reason(workspace, what: str) -> str:
    """Why a curve over training (`what`: "training curves", "BLEU points") is empty."""
    if workspace is None:
        return f"Open or create a model: its {what} are drawn here as it trains."
    if getattr(workspace, "data", None) is None:  # e.g. a Hugging Face folder just opened
        return (f"No {what}: this model has no recorded training and no data to train on "
                "(Model ▸ Data…, Ctrl+D).")
    return f"No {what} yet: Train (Ctrl+T) draws them here."
