"""A lesson's `@set PANEL.CONTROL VALUE` and `@highlight PANEL.CONTROL` on a real panel.

A control is named by its objectName or the panel's attribute that holds it (`gradients.slider`);
its value is set the way its kind of widget takes one.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from explorer.errors import UserError
from explorer.lessons.format import parse_value

HIGHLIGHT_STYLE = "border: 3px solid #ff9800; border-radius: 3px;"


def find_control(panel: QWidget, name: str) -> QWidget:
    widget = panel.findChild(QWidget, name) or getattr(panel, name, None)
    if not isinstance(widget, QWidget) and not hasattr(widget, "setValue"):
        raise UserError(f"the {panel.objectName()} has no control {name!r}")
    return widget


def set_control(panel: QWidget, name: str, text: str) -> None:
    widget, value = find_control(panel, name), parse_value(str(text))
    if isinstance(widget, QComboBox):
        index = widget.findData(str(value))  # an item named in its data ("adjectives (12)")
        index = index if index >= 0 else widget.findText(str(value))
        if index < 0:
            raise UserError(f"{name}: no choice {value!r}")
        widget.setCurrentIndex(index)
    elif isinstance(widget, QAbstractButton) and widget.isCheckable():
        widget.setChecked(bool(value))
    elif isinstance(widget, QLineEdit):
        widget.setText(str(value))
        widget.editingFinished.emit()
    elif isinstance(widget, QPlainTextEdit):
        widget.setPlainText(str(value))
    elif hasattr(widget, "setValue"):
        widget.setValue(value)
    else:
        raise UserError(f"{name}: cannot set a {type(widget).__name__}")


def control_value(panel: QWidget, name: str):
    """What a control holds now, as `set_control` would set it (a checked box: True)."""
    widget = find_control(panel, name)
    if isinstance(widget, QComboBox):  # its item's data when it has a name there
        return widget.currentData() if isinstance(widget.currentData(), str) else widget.currentText()
    if isinstance(widget, QAbstractButton) and widget.isCheckable():
        return widget.isChecked()
    if isinstance(widget, QLineEdit):
        return widget.text()
    if isinstance(widget, QPlainTextEdit):
        return widget.toPlainText()
    if hasattr(widget, "value"):
        return widget.value()
    raise UserError(f"{name}: cannot read a {type(widget).__name__}")


def highlight_control(panel: QWidget, name: str, on: bool = True) -> QWidget:
    widget = find_control(panel, name)
    if isinstance(widget, QWidget):
        widget.setStyleSheet(HIGHLIGHT_STYLE if on else "")
        if on:
            widget.setFocus()
    return widget
