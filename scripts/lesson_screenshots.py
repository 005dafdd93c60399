"""Screenshots of two built-in lessons in a real window: at 1280 x 800, and in presentation mode
at 1920 x 1080, into docs/screenshots/. Run under Xvfb:

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


def main() -> int:
    from explorer.lessons.format import builtin_lessons
    from explorer.ui.app import apply_theme
    from explorer.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv)
    apply_theme(app)
    OUT.mkdir(parents=True, exist_ok=True)
    for stem, panel in LESSONS.items():
        settings = QSettings(tempfile.mktemp(suffix=".ini"), QSettings.Format.IniFormat)
        window = MainWindow(settings=settings, load_demo=False)
        window.resize(1280, 800)
        window.show()
        window.create_panels()
        path = next(p for p in builtin_lessons() if p.stem.startswith(stem))
        window.open_lesson(path.parent)  # the built-in course, listed in the dock
        dock = window.lesson_dock
        wait_until(app, lambda: dock.do_button.isEnabled())
        dock.open_lesson(path)
        wait_until(app, lambda: dock.do_button.isEnabled())
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
