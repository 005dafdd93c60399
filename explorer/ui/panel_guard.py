"""A panel whose update raises shows the error in itself; training and the other panels go on.

Panels are driven by the bus's signals (explorer/ui/bus.py): each panel connects its own slots,
and everything it draws follows from them. The main window builds every panel with
`guarded_panel(cls, bus)`, which hands the panel a view of the bus whose `connect` wraps each slot:
an exception inside the slot becomes a one-line banner over that panel (its tooltip has the place
it came from) instead of a traceback, and the next call of the same slot that succeeds clears it.
The panels themselves need no code for this.
"""

from __future__ import annotations

import inspect
import logging
import traceback

import shiboken6
from PySide6.QtCore import QEvent, QObject, SignalInstance
from PySide6.QtWidgets import QLabel, QWidget

from explorer.errors import first_line

log = logging.getLogger(__name__)


def guarded_panel(panel_class, bus, *args, **kwargs):
    """`panel_class(bus, ...)` whose bus-driven updates cannot raise out of the panel."""
    guarded = GuardedBus(bus)
    panel = panel_class(guarded, *args, **kwargs)
    guarded.panel = panel
    return panel


class GuardedBus:
    """The bus as one panel sees it: the same signals and attributes, slots wrapped on connect."""

    def __init__(self, bus) -> None:
        self._bus = bus
        self.panel: QWidget | None = None
        self._wrappers: dict = {}  # slot -> its wrapper, for disconnect

    def __getattr__(self, name: str):
        value = getattr(self._bus, name)
        if isinstance(value, SignalInstance):
            return _GuardedSignal(value, self)
        return value

    def wrap(self, slot):
        takes = _positional_count(slot)
        where = getattr(slot, "__qualname__", None) or getattr(slot, "__name__", repr(slot))

        def guarded(*args):
            panel = self.panel
            if panel is not None and not shiboken6.isValid(panel):
                return  # the panel is gone; its connections die with the bus
            try:
                slot(*(args if takes is None else args[:takes]))
            except Exception as exc:  # noqa: BLE001 - shown in the panel; everything else goes on
                if panel is None:  # still in the panel's constructor: a real bug, raise it
                    raise
                show_failure(panel, where, exc)
                return
            if panel is not None and getattr(panel, "_panel_failures", None):
                clear_failure(panel, where)

        self._wrappers[slot] = guarded
        return guarded


class _GuardedSignal:
    def __init__(self, signal: SignalInstance, guard: GuardedBus) -> None:
        self._signal = signal
        self._guard = guard

    def connect(self, slot, *args, **kwargs):
        return self._signal.connect(self._guard.wrap(slot), *args, **kwargs)

    def disconnect(self, slot=None):
        if slot is None:
            return self._signal.disconnect()
        return self._signal.disconnect(self._guard._wrappers.pop(slot, slot))

    def __getattr__(self, name: str):
        return getattr(self._signal, name)  # emit and the rest


def _positional_count(slot) -> int | None:
    """How many of a signal's arguments `slot` takes (Qt passes fewer to a slot that wants
    fewer); None: all of them."""
    try:
        parameters = inspect.signature(slot).parameters.values()
    except (TypeError, ValueError):  # a Qt method (QLabel.setText): it takes what Qt sends
        return None
    count = 0
    for parameter in parameters:
        if parameter.kind == parameter.VAR_POSITIONAL:
            return None
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


# -- the banner ------------------------------------------------------------------------------------


class FailureBanner(QLabel):
    """One line across the top of a panel; it follows the panel's width."""

    def __init__(self, panel: QWidget) -> None:
        super().__init__(panel)
        self.setObjectName("panel_failure")
        self.setStyleSheet("QLabel { background: #b3261e; color: white; padding: 2px 6px; }")
        self.setAutoFillBackground(True)
        panel.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            self.fit()
        return False

    def fit(self) -> None:
        panel = self.parentWidget()
        self.setGeometry(0, 0, panel.width(), self.sizeHint().height())
        self.raise_()


def show_failure(panel: QWidget, where: str, exc: BaseException) -> None:
    message = first_line(exc, default="")
    line = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    origin = f" ({frame.filename}:{frame.lineno})" if frame else ""
    log.debug("%s failed", where, exc_info=exc)
    failures = getattr(panel, "_panel_failures", None)
    if failures is None:
        failures = panel._panel_failures = {}  # slot -> its message, while it fails
    failures[where] = line
    banner = panel.findChild(FailureBanner, "panel_failure") or FailureBanner(panel)
    title = getattr(panel, "TITLE", "") or "This panel"
    banner.setText(f"⚠ {title} could not update: {line}")
    banner.setToolTip(f"{where} raised {line}{origin}.\nTraining and the other panels go on; "
                      "this message goes once the panel updates again.")
    banner.fit()
    banner.show()


def clear_failure(panel: QWidget, where: str) -> None:
    failures = getattr(panel, "_panel_failures", {})
    failures.pop(where, None)
    banner = panel.findChild(FailureBanner, "panel_failure")
    if banner is None:
        return
    if failures:  # another slot still fails: show that one
        banner.setText(f"⚠ {getattr(panel, 'TITLE', '')} could not update: "
                       f"{next(iter(failures.values()))}")
    else:
        banner.hide()


def failure_text(panel: QWidget) -> str:
    """The banner's text while the panel shows a failure, else "" (for tests and the smoke run)."""
    banner = panel.findChild(FailureBanner, "panel_failure")
    return banner.text() if banner is not None and not banner.isHidden() else ""
