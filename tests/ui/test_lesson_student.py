"""Each built-in lesson driven as a student would: every `@predict` answered once wrongly and once
rightly in the dock's question box (the reveal follows the first answer), every `@task` checked
first on what the lesson set up (it must not pass: the check reads the student's state, and the
hint shows), then reached through the app's real widgets (a slider, the probe boxes, the Train
button, a set box, the compare panel's source) and passed. Progress is saved in the data folder,
outlives the window and is in the handout (HTML and PDF).

The lessons whose opening or task trains for more than a few seconds are marked slow."""

from __future__ import annotations

import html
import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QRadioButton, QToolButton

from explorer.lessons.format import builtin_lessons, read_lesson

TIMEOUT = 240_000  # a lesson's opening trains two models on a busy CI machine


def lesson_path(stem: str):
    return next(p for p in builtin_lessons() if p.stem.startswith(stem))


def type_into(qtbot, edit, text: str) -> None:
    """Type as a student does: clear the box, type, press Enter."""
    edit.setFocus()
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Delete)
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def press_train(window, qtbot, steps: int) -> None:
    """The Training tab beside the lesson's panels: its "train until step" field, then Train."""
    window.controls_dock.raise_()
    controls = window.controls
    start = window.controller.workspace.step
    controls.steps.setValue(start + steps)
    button = next(b for b in controls.findChildren(QToolButton)
                  if b.defaultAction() is window.actions.train)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.controller.workspace.step >= start + steps
                    and not window.controller.is_training(), timeout=TIMEOUT)


def probe_box(window, qtbot, source: str, target: str = "", panel_id: str = "attention") -> None:
    """The probe boxes above a panel (the attention or hidden-states panel's)."""
    panel = window.panels[panel_id]
    window.show_panel(panel_id)
    type_into(qtbot, panel.source_edit, source)
    if target:
        type_into(qtbot, panel.target_edit, target)
    qtbot.waitUntil(lambda: tuple(window.bus.state.probe.text) == (source, target or
                                                                    window.bus.state.probe.text[1]),
                    timeout=10_000)


def find_beam_example(window, qtbot) -> None:
    panel = window.panels["compare"]
    window.show_panel("compare")
    before = panel.source_box.text()
    qtbot.mouseClick(panel.find_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.source_box.text() != before and panel.find_button.isEnabled(),
                    timeout=TIMEOUT)


# What a student does with the app's widgets to reach each lesson's task (step title -> action).
SOLVE = {
    "01": lambda w, qtbot: w.panels["gradients"].slider.setValue(1.0),
    "02": lambda w, qtbot: press_train(w, qtbot, 200),
    "03": lambda w, qtbot: press_train(w, qtbot, 100),
    "04": lambda w, qtbot: probe_box(w, qtbot, "3 March 2001 at noon", "2001-03-03"),
    "05": lambda w, qtbot: probe_box(w, qtbot, "the happy wolves follow the cats near the river",
                                     "river-SG near wolf-PL happy-PL cat-PL follow-3PL"),
    "06": lambda w, qtbot: w.panels["positional"].shift_box.setValue(30),
    "07": find_beam_example,
    "08": lambda w, qtbot: probe_box(w, qtbot, "The guard arrived late because it"),
    "09": lambda w, qtbot: press_train(w, qtbot, 50),
    "10": lambda w, qtbot: press_train(w, qtbot, 30),
    "11": lambda w, qtbot: w.panels["embeddings"].set_box.setCurrentIndex(
        w.panels["embeddings"].set_box.findData("adjectives")),
    "12": lambda w, qtbot: press_train(w, qtbot, 100),
    "13": lambda w, qtbot: probe_box(w, qtbot, "(a)(c)(d)(e)(ff)", panel_id="hidden"),
    "14": lambda w, qtbot: probe_box(w, qtbot, "abcdefghijklmnopq", "qponmlkjihgfedcba"),
    "15": lambda w, qtbot: press_train(w, qtbot, 100),
    "16": lambda w, qtbot: probe_box(w, qtbot, "the other brother bathes there"),
}
QUICK = ("01", "04", "05", "06", "08", "11", "13", "14", "16")  # demo checkpoints or little training


def open_lesson(window, qtbot, stem: str):
    window.open_lesson(lesson_path(stem))
    dock = window.lesson_dock
    qtbot.waitUntil(lambda: dock.check_button.isEnabled(), timeout=TIMEOUT)
    return dock


def go_to(dock, qtbot, index: int) -> None:
    while dock.index < index:
        qtbot.mouseClick(dock.next_button, Qt.MouseButton.LeftButton)


def answer(dock, qtbot, prediction, right: bool) -> None:
    box = dock.predict_box
    if prediction.choices:
        number = int(prediction.answer) if right else int(prediction.answer) % len(prediction.choices) + 1
        button = box.findChild(QRadioButton, f"choice_{number}")  # on its circle, as a student does
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton, pos=QPoint(6, button.height() // 2))
    else:
        value = prediction.answer if right else prediction.answer * 10 + 1
        box.number.selectAll()
        qtbot.keyClick(box.number, Qt.Key.Key_Delete)
        qtbot.keyClicks(box.number, f"{value:g}")
    qtbot.mouseClick(box.submit, Qt.MouseButton.LeftButton)


def press_check(dock, qtbot, index: int) -> list:
    dock.results.pop(index, None)
    errors: list[str] = []  # a check that raises reaches the window as one line, not as results

    def failed(message: str) -> None:
        errors.append(message)

    dock.window_.controller.error.connect(failed)
    try:
        qtbot.mouseClick(dock.check_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: index in dock.results or bool(errors), timeout=TIMEOUT)
    finally:
        dock.window_.controller.error.disconnect(failed)
    assert not errors, errors
    return dock.results[index]


def drive(window, qtbot, stem: str) -> None:
    dock = open_lesson(window, qtbot, stem)
    lesson = dock.session.lesson
    predicted = tasks = 0
    for index, step in enumerate(lesson.steps):
        go_to(dock, qtbot, index)
        if step.prediction is not None:
            predicted += 1
            assert dock.predict_box.isVisible()
            assert step.prediction.question in html.unescape(dock.predict_box.question.text())
            reveal = step.reveal.splitlines()[0][:30] if step.reveal else None
            assert reveal is None or reveal not in dock.text.toPlainText()  # it waits for the answer
            assert not dock.do_button.isEnabled()
            answer(dock, qtbot, step.prediction, right=False)
            assert dock.predict_box.result.text().startswith("✗ Not quite")
            assert step.prediction.right_answer in html.unescape(dock.predict_box.result.text())
            if reveal is not None:
                assert reveal in dock.text.toPlainText()
            answer(dock, qtbot, step.prediction, right=True)
            assert dock.predict_box.result.text().startswith("✓ Right")
            assert dock.do_button.isEnabled()
        if step.is_task:
            tasks += 1
            assert dock.task_box.isVisible() and not dock.do_button.isVisible()
            # the lesson's own set-up alone does not reach the goal: the check reads the student's
            first = press_check(dock, qtbot, index)
            assert not all(r.passed for r in first), [r.line for r in first]
            assert dock.task_box.hint.isVisible() and step.hints[0] in html.unescape(
                dock.task_box.hint.text())
            failed = [dock.checks.item(i).text() for i in range(dock.checks.count())
                      if dock.checks.item(i).text().startswith("✗")]
            assert failed and all("measured on" in row for row in failed)
            SOLVE[stem](window, qtbot)
            if not all(r.passed for r in dock.results.get(index, [])):  # training checks itself
                qtbot.waitUntil(lambda: not window.controller.jobs.busy, timeout=TIMEOUT)
                press_check(dock, qtbot, index)
            assert all(r.passed for r in dock.results[index]), [r.line for r in dock.results[index]]
            assert dock.task_box.status.text().startswith("✓ Reached")
    assert predicted >= 1 and tasks >= 1
    saved = json.loads(dock.progress.path.read_text(encoding="utf-8"))[lesson.path.name]
    assert all(not row["first_right"] and row["right"] and row["attempts"] == 2
               for row in saved["predictions"].values())
    assert all(state["passed"] and state["attempts"] >= 2 and not state["solution"]
               for state in saved["tasks"].values())


@pytest.mark.parametrize("stem", [pytest.param(s, marks=() if s in QUICK else pytest.mark.slow)
                                  for s in sorted(SOLVE)])
def test_a_student_works_through_the_lesson(make_main_window, qtbot, stem):
    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    drive(window, qtbot, stem)


def test_every_builtin_lesson_has_a_prediction_a_task_and_a_way_to_solve_it():
    lessons = [read_lesson(path) for path in builtin_lessons()]
    for lesson in lessons:
        steps = lesson.steps
        assert any(s.prediction for s in steps) and any(s.is_task for s in steps), lesson.path.name
        assert all(s.hints and s.solution[0] for s in steps if s.is_task), lesson.path.name
    assert {p.stem[:2] for p in builtin_lessons()} == set(SOLVE)


def test_progress_outlives_the_window_and_is_in_the_handout(make_main_window, qtbot, tmp_path):
    """Lesson 1 in a course: a wrong prediction, a task reached with the solution; a new window
    shows both in the course list and the question box, and the handout lists them (HTML, PDF)."""
    window = make_main_window()
    window.open_lesson(lesson_path("01").parent)  # the built-in course
    dock = window.lesson_dock
    qtbot.waitUntil(lambda: dock.check_button.isEnabled(), timeout=TIMEOUT)
    lesson = dock.session.lesson
    predict = next(i for i, s in enumerate(lesson.steps) if s.prediction)
    task = next(i for i, s in enumerate(lesson.steps) if s.is_task)
    go_to(dock, qtbot, predict)
    answer(dock, qtbot, lesson.steps[predict].prediction, right=False)
    go_to(dock, qtbot, task)
    qtbot.mouseClick(dock.task_box.solution_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: task in dock.results, timeout=TIMEOUT)
    assert window.panels["gradients"].slider.value() == pytest.approx(1.0)  # the solution did it
    assert all(r.passed for r in dock.results[task])
    first_row = dock.course_list.item(0).text()
    window.close()

    again = make_main_window()
    again.open_lesson(lesson_path("01").parent)
    dock = again.lesson_dock
    qtbot.waitUntil(lambda: dock.check_button.isEnabled(), timeout=TIMEOUT)
    assert dock.course_list.item(0).text() == first_row and not first_row.startswith("○ 0/")
    go_to(dock, qtbot, predict)
    assert dock.predict_box.result.text().startswith("✗ Not quite")  # the saved answer
    go_to(dock, qtbot, task)
    assert "(with the solution)" in dock.task_box.status.text()
    written = dock.export_handout(tmp_path)
    page = html.unescape((tmp_path / "handout.html").read_text(encoding="utf-8"))
    chosen = lesson.steps[predict].prediction
    wrong = chosen.choices[int(chosen.answer) % len(chosen.choices)]
    assert f"Your prediction: {wrong} — not right" in page
    assert "Reached with the solution" in page and lesson.steps[task].goal in page
    pdf = tmp_path / "handout.pdf"
    assert pdf in written and pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 5000


def test_a_task_is_checked_live_while_the_student_trains(make_main_window, qtbot):
    """Lesson 1's task, not reached yet (a_h still 1.1): while the student trains, its checks run
    on the trainer's snapshots (rows marked "live:"); when the training stops, Check runs by
    itself."""
    window = make_main_window()
    window.show()
    dock = open_lesson(window, qtbot, "01")
    task = next(i for i, step in enumerate(dock.session.lesson.steps) if step.is_task)
    go_to(dock, qtbot, task)
    window.controls_dock.raise_()
    window.controls.steps.setValue(window.controller.workspace.step + 100_000)
    window.actions.train.trigger()
    live = lambda: any(dock.checks.item(i).text().startswith("live: ")
                       for i in range(dock.checks.count()))
    qtbot.waitUntil(live, timeout=TIMEOUT)
    assert window.controller.is_training() and task not in dock.results  # not an attempt
    window.actions.stop.trigger()
    qtbot.waitUntil(lambda: task in dock.results, timeout=TIMEOUT)
    assert not all(r.passed for r in dock.results[task])  # 1.1^100: not reached
    assert dock.progress.task_state(dock.session.lesson, task)["attempts"] == 1
