"""The lesson dock's two boxes for the student's turn: a step's `@predict` (choices as radio
buttons, or a number field, and Submit; then right or not and why) and its `@task` (the goal, the
hints shown after failed checks, the solution on request). Plain widgets; the dock wires them."""

from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QButtonGroup,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)


def _escape(text: str) -> str:
    return html.escape(text, quote=False)  # a label's rich text: apostrophes stay as they are


RIGHT_STYLE = "color: #1b7f3b;"
WRONG_STYLE = "color: #b3261e;"


def _label(bold: bool = False) -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    label.setTextFormat(label.textFormat().RichText)
    if bold:
        label.setStyleSheet("font-weight: bold;")
    return label


class PredictBox(QGroupBox):
    """Asks a `@predict` question; `answered(given)` carries a choice's number (1 = first) or the
    number typed."""

    answered = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Predict first", parent)
        self.setObjectName("predict")
        self.question = _label(bold=True)
        self.choices = QButtonGroup(self)
        self.choice_area = QVBoxLayout()
        self.number = QLineEdit()
        self.number.setObjectName("prediction_number")
        self.number.setPlaceholderText("your estimate (a number)")
        self.number.setValidator(QDoubleValidator())
        self.submit = QPushButton("Submit")
        self.submit.setObjectName("submit_prediction")
        self.submit.setToolTip("Keep this answer as your prediction, then see what the app shows")
        self.result = _label()
        row = QHBoxLayout()
        row.addWidget(self.number, stretch=1)
        row.addWidget(self.submit)
        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addLayout(self.choice_area)
        layout.addLayout(row)
        layout.addWidget(self.result)
        self.submit.clicked.connect(self._submit)
        self.number.returnPressed.connect(self._submit)
        self.choices.idToggled.connect(lambda *_: self._enable())
        self.number.textChanged.connect(lambda *_: self._enable())
        self.prediction = None

    def ask(self, prediction, record: dict | None) -> None:
        """Show `prediction`'s question (with the student's saved answer, if any)."""
        self.prediction = prediction
        self.question.setText(_escape(prediction.question))
        for button in self.choices.buttons():
            self.choices.removeButton(button)
            button.deleteLater()
        for number, choice in enumerate(prediction.choices, start=1):
            button = QRadioButton(choice)
            button.setObjectName(f"choice_{number}")
            self.choices.addButton(button, number)
            self.choice_area.addWidget(button)
        self.number.setVisible(not prediction.choices)
        self.number.clear()
        self.result.clear()
        if record:
            self.show_result(record["answer"], record["right"])
        self._enable()

    def _given(self):
        if self.prediction.choices:
            return self.choices.checkedId() if self.choices.checkedId() > 0 else None
        text = self.number.text().strip().replace(",", "")
        try:
            return float(text)
        except ValueError:
            return None

    def _enable(self) -> None:
        self.submit.setEnabled(self.prediction is not None and self._given() is not None)

    def _submit(self) -> None:
        given = self._given()
        if given is not None:
            self.answered.emit(given)

    def show_result(self, given, right: bool) -> None:
        """Right or not, the answer and why (the student may answer again: the first is kept)."""
        prediction = self.prediction
        if prediction.choices and 1 <= int(given) <= len(prediction.choices):
            self.choices.button(int(given)).setChecked(True)
        elif not prediction.choices:
            self.number.setText(f"{float(given):g}")
        why = f"<br>{_escape(prediction.why)}" if prediction.why else ""
        if right:
            text = f"✓ Right: {_escape(prediction.right_answer)}.{why}"
        else:
            text = (f"✗ Not quite: you said {_escape(prediction.shown(given))}; the answer is "
                    f"{_escape(prediction.right_answer)}.{why}")
        self.result.setStyleSheet(RIGHT_STYLE if right else WRONG_STYLE)
        self.result.setText(text)


class TaskBox(QGroupBox):
    """A `@task`'s goal, the hints earned by failed checks, and its solution on request."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Your turn", parent)
        self.setObjectName("task")
        self.goal = _label(bold=True)
        self.status = _label()
        self.status.setObjectName("task_status")
        self.hint = _label()
        self.hint.setObjectName("hint")
        self.hint.setStyleSheet("color: #8a5a00;")
        self.hint_button = QPushButton("Hint")
        self.hint_button.setObjectName("hint_button")
        self.hint_button.setToolTip("Show the next hint")
        self.solution_button = QPushButton("Solution")
        self.solution_button.setObjectName("solution_button")
        self.solution_button.setToolTip("Show the solution and do it (your progress notes that "
                                        "the solution was used)")
        buttons = QHBoxLayout()
        buttons.addWidget(self.hint_button)
        buttons.addWidget(self.solution_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.goal)
        layout.addWidget(self.status)
        layout.addWidget(self.hint)
        layout.addLayout(buttons)

    def show_task(self, step, state: dict) -> None:
        self.goal.setText(_escape(step.goal))
        self.show_state(step, state)

    def show_state(self, step, state: dict) -> None:
        hints = step.hints[: state.get("hints", 0)]
        solution, after = step.solution
        shown = [f"Hint: {_escape(h)}" for h in hints]
        if solution and (state.get("solution") or state.get("attempts", 0) - int(state.get("passed", 0))
                         >= after):
            shown.append(f"Solution: {_escape(solution)}")
        self.hint.setText("<br>".join(shown))
        self.hint.setVisible(bool(shown))
        self.hint_button.setEnabled(state.get("hints", 0) < len(step.hints))
        if state.get("passed"):
            self.status.setStyleSheet(RIGHT_STYLE)
            self.status.setText("✓ Reached" + (" (with the solution)" if state.get("solution") else "")
                                + f" after {state.get('attempts', 0)} check(s).")
        elif state.get("attempts"):
            self.status.setStyleSheet(WRONG_STYLE)
            self.status.setText(f"✗ Not yet ({state['attempts']} check(s)): see below what was "
                                "measured.")
        else:
            self.status.setStyleSheet("")
            self.status.setText("Use the app's controls, then press Check (it also checks live "
                                "while you train).")
