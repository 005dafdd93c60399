"""Screenshots of two built-in lessons in a real window: at 1280 x 800, and in presentation mode
at 1920 x 1080; and of a student's turn at 1280 x 800 (a @predict before and after the answer, a
failed @task with its hint, the course list with progress), into docs/screenshots/. Run under Xvfb:

    xvfb-run -a -s "-screen 0 1920x1080x24" python scripts/lesson_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

OUT = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
LESSONS = {"01": "gradients", "05": "attention"}  # lesson stem prefix -> the panel presented


def settle(app, rounds: int = 50) -> None:
    for _ in range(rounds):
        app.processEvents()
        time.sleep(0.01)


def wait_until(app, condition, seconds: float = 300.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)  # a script, not a test: let the jobs' threads run


def fresh_settings() -> QSettings:
    """Settings of their own, the progress in a temporary data folder: nobody's real progress."""
    settings = QSettings(tempfile.mktemp(suffix=".ini"), QSettings.Format.IniFormat)
    settings.setValue("runs/data_dir", tempfile.mkdtemp(prefix="lesson-screenshots-"))
    return settings


def answer_first_prediction(app, dock) -> None:
    """Answer the step's @predict (rightly), so that "Do it" is enabled."""
    prediction = dock.step.prediction
    if prediction is not None:
        dock.answer(int(prediction.answer) if prediction.choices else prediction.answer)
        settle(app)


def student_screenshots(app) -> None:
    """Lesson 1 in the built-in course: its question before and after a (wrong) answer, its task
    checked before it is reached (the feedback and the hint), and the course list with progress."""
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QRadioButton

    from explorer.lessons.format import builtin_lessons
    from explorer.ui.main_window import MainWindow

    window = MainWindow(settings=fresh_settings(), load_demo=False)
    window.resize(1280, 800)
    window.show()
    window.create_panels()
    window.open_lesson(builtin_lessons()[0].parent)
    dock = window.lesson_dock
    wait_until(app, lambda: dock.check_button.isEnabled())
    wait_until(app, lambda: window.panels["gradients"].has_content())
    settle(app, 200)
    window.grab().save(str(OUT / "lesson-predict-before.png"))
    button = dock.predict_box.findChild(QRadioButton, "choice_2")  # "about 100": not right
    QTest.mouseClick(button, Qt.MouseButton.LeftButton, pos=QPoint(6, button.height() // 2))
    QTest.mouseClick(dock.predict_box.submit, Qt.MouseButton.LeftButton)
    settle(app, 100)
    window.grab().save(str(OUT / "lesson-predict-after.png"))
    task = next(i for i, step in enumerate(dock.session.lesson.steps) if step.is_task)
    dock.go(task)
    window.panels["gradients"].slider.setValue(1.25)  # the student's try: far too large
    dock.check_button.click()
    wait_until(app, lambda: task in dock.results and not window.controller.jobs.busy)
    settle(app, 200)
    window.grab().save(str(OUT / "lesson-task-hint.png"))
    window.panels["gradients"].slider.setValue(1.01)
    dock.check_button.click()
    wait_until(app, lambda: all(r.passed for r in dock.results.get(task, [])) and
               not window.controller.jobs.busy)
    dock.go(task + 1)
    settle(app, 200)
    window.grab().save(str(OUT / "lesson-course-progress.png"))
    window.close()
    settle(app)


def main() -> int:
    from explorer.lessons.format import builtin_lessons
    from explorer.ui.app import apply_theme
    from explorer.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv)
    apply_theme(app)
    OUT.mkdir(parents=True, exist_ok=True)
    student_screenshots(app)
    for stem, panel in LESSONS.items():
        window = MainWindow(settings=fresh_settings(), load_demo=False)
        window.resize(1280, 800)
        window.show()
        window.create_panels()
        path = next(p for p in builtin_lessons() if p.stem.startswith(stem))
        window.open_lesson(path.parent)  # the built-in course, listed in the dock
        dock = window.lesson_dock
        wait_until(app, lambda: dock.check_button.isEnabled())
        dock.open_lesson(path)
        wait_until(app, lambda: dock.check_button.isEnabled())
        answer_first_prediction(app, dock)
        dock.do_button.click()
        wait_until(app, lambda: 0 in dock.results and not window.controller.jobs.busy)
        wait_until(app, lambda: window.panels[panel].has_content())
        wait_until(app, lambda: not window.bus.probing and not window.panels[panel].busy())
        settle(app, 300)
        window.grab().save(str(OUT / f"lesson-{path.stem}.png"))
        window.presentation.enter(panel)
        window.presentation.screen.resize(1920, 1080)
        settle(app, 300)
        window.presentation.screen.grab().save(str(OUT / f"lesson-{path.stem}-presentation.png"))
        window.presentation.leave()
        window.close()
        settle(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
