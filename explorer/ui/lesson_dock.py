"""The lesson dock: a lesson's steps one screen at a time (text, Back / Next, "Do it", check
status) beside the panels it names, arranged as its front matter says.

The lesson's model is built (and its front-matter steps trained) by a job on the controller's
runner; `@train N` trains in the app's own training thread (curves and probes live); checks run
as a job when no training runs. The core is explorer.lessons (no Qt).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from explorer.errors import UserError
from explorer.lessons.format import course, read_lesson
from explorer.lessons.runner import panel_controls, step_figure
from explorer.lessons.session import LessonSession

LESSON_DOCK_ID = "lesson"
TOKEN_TAG = re.compile(r"<(/?[A-Za-z_]+)>")  # <mask>, <eos>: tokens, not HTML


def lesson_markdown(text: str) -> str:
    """A lesson's Markdown with its token names (<mask>, <eos>) shown: raw HTML would swallow
    them and the rest of the step. Code spans show them as they are."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # outside code spans
        parts[i] = TOKEN_TAG.sub(r"&lt;\1&gt;", parts[i])
    return "`".join(parts)
LIVE_PROBE_EVERY_S = 0.5  # the lesson's own runs skip probes; the app's training shows them


def open_session(session: LessonSession) -> LessonSession:
    """A job: build or open the lesson's model(s) and train its front-matter steps."""
    for _event in session.open():
        pass
    return session


def train_compare(session: LessonSession, steps: int) -> LessonSession:
    if session.compare is not None:
        for _event in session.train_variant(steps):
            pass
    return session


def run_checks(session: LessonSession, directives) -> list:
    return [session.check(directive) for directive in directives]


class LessonDock(QDockWidget):
    def __init__(self, window) -> None:
        super().__init__("Lesson", window)
        self.setObjectName(LESSON_DOCK_ID)
        self.window_ = window
        self.session: LessonSession | None = None
        self.index = 0
        self.results: dict[int, list] = {}
        self._training_for: int | None = None  # step whose @train is running
        self._steps_trained = 0  # its steps, which the `compare.` twin trains afterwards
        self.lessons: list = []  # the course's lessons (one when a single file is open)
        self.passed: dict[Path, set] = {}  # lesson -> its (step, check) pairs passed so far
        self.course_list = QListWidget()
        self.course_list.setObjectName("course")
        self.course_list.setToolTip("The course's lessons, with the checks you passed in each: "
                                    "click one to open it")
        self.course_list.setMaximumHeight(130)  # six rows: the step's text keeps the room
        # progress first, long titles elided (the dock is a third of a 1280 px window)
        self.course_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.course_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.course_list.hide()  # a single lesson needs no list
        self.course_list.itemClicked.connect(
            lambda item: self.open_lesson(self.lessons[self.course_list.row(item)].path))
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-weight: bold; font-size: 14pt;")
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.checks = QListWidget()
        self.checks.setToolTip("This step's conditions, measured on your model: ✓ passed, ✗ not yet")
        # long conditions (a sentence BLEU's sentences) end in "…"; each row's tooltip has it all
        self.checks.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.checks.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.back_button = QPushButton("◀ Back")
        self.back_button.setShortcut("Alt+PgUp")
        self.back_button.setToolTip("The previous step (Alt+PgUp)")
        self.next_button = QPushButton("Next ▶")
        self.next_button.setShortcut("Alt+PgDown")
        self.next_button.setToolTip("The next step (Alt+PgDown)")
        self.do_button = QPushButton("Do it")
        self.do_button.setToolTip("Set the step's controls, train or decode what it says, then "
                                  "check its conditions")
        self.check_button = QPushButton("Check")
        self.check_button.setToolTip("Measure this step's conditions on the model as it is now")
        self.handout_button = QPushButton("Handout…")
        self.handout_button.setToolTip("Export every step's figure and text to a folder "
                                       "(PNG, SVG, handout.md, handout.html)")
        buttons = QHBoxLayout()
        for button in (self.back_button, self.do_button, self.check_button, self.next_button):
            buttons.addWidget(button)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.course_list)
        layout.addWidget(self.title)
        layout.addWidget(self.text, stretch=3)
        layout.addWidget(self.checks, stretch=1)
        layout.addLayout(buttons)
        layout.addWidget(self.handout_button)
        self.setWidget(body)
        self.back_button.clicked.connect(lambda: self.go(self.index - 1))
        self.next_button.clicked.connect(self.next)
        self.do_button.clicked.connect(self.do_step)
        self.check_button.clicked.connect(self.check_step)
        self.handout_button.clicked.connect(self.export_handout_dialog)
        window.bus.step_metrics.connect(self._on_metrics)
        window.bus.training_state.connect(self._on_training_state)
        self._set_enabled(False)

    # -- opening ------------------------------------------------------------------------------

    def open_course(self, folder: str | Path) -> None:
        """Every lesson of the folder in the list (each file checked first), the first opened."""
        try:
            lessons = [read_lesson(path) for path in course(folder)]
        except UserError as exc:
            self.window_.show_error(str(exc))
            return
        self.lessons = lessons
        self.course_list.show()
        self.open_lesson(lessons[0].path)

    def _show_course(self) -> None:
        """One row per lesson: ✓ when all its checks passed, its checks passed so far, the one
        open in bold."""
        self.course_list.clear()
        for row, lesson in enumerate(self.lessons):
            total = sum(len(step.of("check")) for step in lesson.steps)
            passed = len(self.passed.get(lesson.path, ()))
            mark = "✓" if total and passed == total else "○"
            self.course_list.addItem(f"{mark} {passed}/{total}  {row + 1}. {lesson.title}")
            self.course_list.item(row).setToolTip(
                f"{lesson.title}: {passed} of its {total} checks passed")
            if self.session is not None and lesson.path == self.session.lesson.path:
                item = self.course_list.item(row)
                font = item.font()
                font.setBold(True)
                item.setFont(font)
                self.course_list.setCurrentRow(row)

    def open_lesson(self, path: str | Path, overrides: dict | None = None) -> None:
        try:
            lesson = read_lesson(path)
        except UserError as exc:
            self.window_.show_error(str(exc))
            return
        if lesson.path not in [known.path for known in self.lessons]:  # not of the open course
            self.lessons = [lesson]
            self.course_list.hide()
        self.session = LessonSession(lesson, overrides, keep_cores=1)  # a core for the window
        self._set_enabled(False)  # until its model is open
        self.results, self.index = {}, 0
        self._show_course()
        self.title.setText(lesson.title)
        self.text.setMarkdown(f"*Setting up: {lesson.settings.get('steps', 0)} training steps…*\n\n"
                              + lesson_markdown(lesson.intro))
        self.show()
        self.raise_()
        self.window_.controller.run_job(open_session, self.session, on_done=self._opened,
                                        label=f"opening lesson {lesson.path.name}")

    def _opened(self, session: LessonSession) -> None:
        import dataclasses

        if session is not self.session:
            return
        workspace = session.workspace
        workspace.train_config = dataclasses.replace(workspace.train_config,
                                                     probe_every_s=LIVE_PROBE_EVERY_S)
        self.window_.controller.set_workspace(workspace)
        source, target = session.probe
        self.window_.bus.probe_requested.emit(source, target)
        arrange_lesson_panels(self.window_, session.lesson.panels, session.lesson.layout, self)
        self._set_enabled(True)
        self.go(0)

    # -- steps --------------------------------------------------------------------------------

    @property
    def step(self):
        return self.session.lesson.steps[self.index]

    def go(self, index: int) -> None:
        if self.session is None:
            return
        steps = self.session.lesson.steps
        self.index = max(0, min(index, len(steps) - 1))
        step = self.step
        self.title.setText(f"{self.session.lesson.title} — {self.index + 1}/{len(steps)}: {step.title}")
        cites = self.session.lesson.settings.get("cites")
        self.text.setMarkdown(lesson_markdown(step.text + (f"\n\n*Lecture notes: {cites}*"
                                                           if cites and self.index == 0 else "")))
        self.back_button.setEnabled(self.index > 0)
        last = self.index == len(steps) - 1
        self.next_button.setText("Next lesson ▶" if last and self._next_lesson() else "Next ▶")
        self.next_button.setEnabled(not last or self._next_lesson() is not None)
        self._show_results()
        self.window_.show_panel(step_figure(self.session.lesson, self.index))
        for directive in step.of("highlight"):
            self._control(directive.args[0], None)

    def _next_lesson(self):
        paths = [lesson.path for lesson in self.lessons]
        here = paths.index(self.session.lesson.path) if self.session.lesson.path in paths else -1
        return self.lessons[here + 1] if 0 <= here < len(paths) - 1 else None

    def next(self) -> None:
        """The next step; after a course lesson's last step, the course's next lesson."""
        if self.index < len(self.session.lesson.steps) - 1:
            self.go(self.index + 1)
        elif self._next_lesson() is not None:
            self.open_lesson(self._next_lesson().path)

    def _show_results(self) -> None:
        """One row per `@check` of the step: ✓ / ✗ with the measured value, … until checked."""
        self.checks.clear()
        self.checks.setVisible(bool(self.step.of("check")))  # no empty box under a plain step
        results = self.results.get(self.index, [])
        for i, directive in enumerate(self.step.of("check")):
            if i < len(results):
                self.checks.addItem(f"{'✓' if results[i].passed else '✗'} {results[i].line}")
            else:
                options = " ".join(f"{k}={v}" for k, v in directive.options.items())
                self.checks.addItem(f"… {directive.args[0]} {options}")
            self.checks.item(i).setToolTip(self.checks.item(i).text())

    def _control(self, target: str, value) -> None:
        """`@set` / `@highlight` on a panel's control (the session's own are applied by it)."""
        from explorer.ui.lesson_controls import highlight_control, set_control

        panel_id, _, name = target.partition(".")
        panel = self.window_.panels.get(panel_id)
        if panel is None or not name:
            return
        try:
            set_control(panel, name, value) if value is not None else highlight_control(panel, name)
        except UserError as exc:
            self.window_.show_error(f"{self.session.lesson.path}: {exc}")

    def do_step(self) -> None:
        """Apply the step's sets, then train (in the app's training thread) or decode, then check."""
        step = self.step
        for directive in step.of("set"):
            value = " ".join(directive.args[1:])
            if not self.session.set_control(directive.args[0], value):
                self._control(directive.args[0], value)
            elif directive.args[0].startswith("probe"):
                self.window_.bus.probe_requested.emit(*self.session.probe)
        for directive in step.of("decode"):
            self.session.decode(int(directive.args[0]))
        trains = step.of("train")
        if trains:
            self._training_for = self.index
            self._steps_trained = sum(int(d.args[0]) for d in trains)
            self.window_.controller.train(steps=self._steps_trained)
        else:
            self.check_step()

    def _on_metrics(self, batch) -> None:
        if self.session is not None and self._training_for is not None:
            self.session.history.extend(batch)

    def _on_training_state(self, state: str) -> None:
        if self._training_for is None or state in ("running", "paused"):
            return
        self._training_for = None
        self.session.weights_changed()
        if self.session.compare is not None:  # its twin trains the same steps, then the check
            self.window_.controller.run_job(train_compare, self.session, self._steps_trained,
                                            on_done=lambda _s: self.check_step(),
                                            label="training the comparison model")
        else:
            self.check_step()

    def check_step(self) -> None:
        if self.session is None or self.window_.controller.is_training():
            return
        checks = self.step.of("check")
        if not checks:
            return
        index = self.index
        self.window_.controller.run_job(run_checks, self.session, checks,
                                        on_done=lambda results: self._checked(index, results),
                                        label="checking")

    def _checked(self, index: int, results: list) -> None:
        self.results[index] = results
        passed = self.passed.setdefault(self.session.lesson.path, set())
        passed.update((index, i) for i, result in enumerate(results) if result.passed)
        self._show_course()
        if index == self.index:
            self._show_results()

    def _set_enabled(self, on: bool) -> None:
        for button in (self.back_button, self.next_button, self.do_button, self.check_button,
                       self.handout_button):
            button.setEnabled(on)

    # -- handout ------------------------------------------------------------------------------

    def export_handout_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the lesson's handout to")
        if folder:
            self.export_handout(Path(folder))

    def export_handout(self, folder: Path) -> list[Path]:
        """Every step's figure (the panel it shows, as the app draws it now, with the step's
        `@set`s) and text, plus handout.md / handout.html, into `folder`."""
        from explorer.lessons.handout import write_handout
        from explorer.ui.lesson_controls import set_control

        lesson, figures = self.session.lesson, {}
        for index in range(len(lesson.steps)):
            panel_id = step_figure(lesson, index)
            panel = self.window_.panels.get(panel_id)
            if panel is None or not panel.has_content():
                continue
            for name, value in panel_controls(lesson, index, panel_id).items():
                set_control(panel, name, value)
            figures[index] = panel.export(folder / f"step-{index + 1:02d}", ("png", "svg"))
        return write_handout(lesson, folder, figures, self.results)


def arrange_lesson_panels(window, panel_ids: list[str], layout: str, lesson_dock) -> None:
    """The lesson's panels beside its dock (tabbed, in columns or in rows), above the training
    controls; the other panels leave the layout. View ▸ Reset layout brings the usual one back."""
    docks = [window.docks[p] for p in panel_ids if p in window.docks]
    for panel_id, dock in window.docks.items():
        if panel_id not in panel_ids:
            window.removeDockWidget(dock)
    window.addDockWidget(Qt.LeftDockWidgetArea, lesson_dock)
    window.splitDockWidget(lesson_dock, window.controls_dock, Qt.Vertical)  # the lesson on top
    window.resizeDocks([lesson_dock, window.controls_dock], [3, 1], Qt.Vertical)
    if not docks:
        return
    window.addDockWidget(Qt.RightDockWidgetArea, docks[0])
    docks[0].setFloating(False)
    for previous, dock in itertools.pairwise(docks):
        dock.setFloating(False)
        if layout == "tabs":
            window.tabifyDockWidget(docks[0], dock)
        else:
            orientation = Qt.Horizontal if layout == "columns" else Qt.Vertical
            window.splitDockWidget(previous, dock, orientation)
    docks[0].raise_()
    window.resizeDocks([lesson_dock], [max(300, window.width() // 3)], Qt.Horizontal)
