"""The lesson dock: a lesson's steps one screen at a time (text, Back / Next, "Do it", check
status) beside the panels it names, arranged as its front matter says.

A `@predict` step asks first (explorer.ui.lesson_question.PredictBox) and reveals the rest of its
text once answered; a `@task` step has no "Do it": the student reaches the goal with the app's
controls and presses Check, which measures their model, probe and controls (and runs live on the
trainer's snapshots while they train); failed checks earn hints, then the solution. Predictions,
checks and tasks are saved per course (explorer.lessons.progress) in the app's data folder and
shown in the course list, which folds away to give the step's text the room.

The lesson's model is built (and its front-matter steps trained) by a job on the controller's
runner; `@train N` trains in the app's own training thread (curves and probes live); checks run
as a job when no training runs. The core is explorer.lessons (no Qt).
"""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QScrollArea,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from explorer.errors import UserError
from explorer.lessons.checks import LIVE_CHECKS
from explorer.lessons.format import course, read_lesson
from explorer.lessons.progress import Progress, course_file
from explorer.lessons.runner import panel_controls, step_figure
from explorer.lessons.session import LessonSession
from explorer.ui.lesson_question import PredictBox, TaskBox

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
LIVE_CHECK_EVERY_S = 2.0  # a task's live checks on the trainer's snapshots, at most this often


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


def run_checks(session: LessonSession, directives, student: bool = False) -> list:
    return [session.check(directive, student) for directive in directives]


def student_controls(window, step) -> dict:
    """The values of the controls the step's checks read (`@PANEL.CONTROL`), from the widgets."""
    from explorer.ui.lesson_controls import control_value

    values = {}
    for directive in step.of("check"):
        for value in directive.options.values():
            if isinstance(value, str) and value.startswith("@"):
                panel_id, _, name = value[1:].partition(".")
                panel = window.panels.get(panel_id)
                if panel is not None and name:
                    values[value[1:]] = control_value(panel, name)
    return values


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
        self.progress: Progress | None = None  # the course's saved progress
        self._student_training = False  # the student's own training runs (a task's live checks)
        self._last_live = 0.0
        self.course_list = QListWidget()
        self.course_list.setObjectName("course")
        self.course_list.setToolTip("The course's lessons, with the checks you passed in each: "
                                    "click one to open it")
        self.course_list.setMaximumHeight(110)  # five rows, and it folds: the step's text keeps the room
        # progress first, long titles elided (the dock is a third of a 1280 px window)
        self.course_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.course_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.course_list.hide()  # a single lesson needs no list
        self.course_list.itemClicked.connect(
            lambda item: self.open_lesson(self.lessons[self.course_list.row(item)].path))
        self.fold_button = QToolButton()
        self.fold_button.setObjectName("fold_course")
        self.fold_button.setCheckable(True)
        self.fold_button.setChecked(True)
        self.fold_button.setToolTip("Show or fold the course's lessons (and your progress in each)")
        self.fold_button.toggled.connect(self._fold)
        self.fold_button.setText("▾ Course")
        self.fold_button.hide()
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-weight: bold;")
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.text.setMinimumHeight(90)
        self.predict_box = PredictBox()
        self.predict_box.answered.connect(self.answer)
        self.task_box = TaskBox()
        self.task_box.hint_button.clicked.connect(self.show_hint)
        self.task_box.solution_button.clicked.connect(self.use_solution)
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
        self.checks.setMaximumHeight(110)
        self.checks.setWordWrap(True)
        header = QHBoxLayout()
        header.addWidget(self.fold_button)
        header.addWidget(self.title, stretch=1)
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addLayout(header)
        layout.addWidget(self.course_list)
        layout.addWidget(self.text, stretch=3)
        layout.addWidget(self.predict_box)
        layout.addWidget(self.task_box)
        layout.addWidget(self.checks, stretch=1)
        layout.addLayout(buttons)
        layout.addWidget(self.handout_button)
        # on a short screen the step scrolls rather than pushing the window past the screen
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(body)
        self.setWidget(scroll)
        self.back_button.clicked.connect(lambda: self.go(self.index - 1))
        self.next_button.clicked.connect(self.next)
        self.do_button.clicked.connect(self.do_step)
        self.check_button.clicked.connect(self.check_step)
        self.handout_button.clicked.connect(self.export_handout_dialog)
        window.bus.step_metrics.connect(self._on_metrics)
        window.bus.training_state.connect(self._on_training_state)
        window.bus.probe.connect(self._on_snapshot)
        self.predict_box.hide()
        self.task_box.hide()
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
        self.fold_button.show()
        self.fold_button.setChecked(True)
        self.course_list.show()
        self.open_lesson(lessons[0].path)

    def _fold(self, shown: bool) -> None:
        self.course_list.setVisible(shown and len(self.lessons) > 1)
        self.fold_button.setText("▾ Course" if shown else "▸ Course")

    def _progress_for(self, lesson) -> Progress:
        from explorer.ui.lesson_figures import progress_folder

        folder = progress_folder(self.window_.settings)
        if self.progress is None or self.progress.path != course_file(folder, lesson.path):
            self.progress = Progress(folder, lesson.path)  # another course's file
        return self.progress

    def _show_course(self) -> None:
        """One row per lesson: ✓ when all is done, predictions answered, tasks reached and checks
        passed so far of all of them (saved: they outlive the app), the one open in bold."""
        self.course_list.clear()
        for row, lesson in enumerate(self.lessons):
            done, total = self._progress_for(lesson).summary(lesson)
            mark = "✓" if total and done == total else "○"
            self.course_list.addItem(f"{mark} {done}/{total}  {row + 1}. {lesson.title}")
            self.course_list.item(row).setToolTip(
                f"{lesson.title}: {done} of {total} done (predictions answered, tasks reached, "
                "checks passed)")
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
            self.fold_button.hide()
        self._progress_for(lesson)
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
        self._show_text()
        record = self.progress.step_record(self.session.lesson, self.index)
        self.predict_box.setVisible(step.prediction is not None)
        if step.prediction is not None:
            self.predict_box.ask(step.prediction, record["predictions"])
        self.task_box.setVisible(step.is_task)
        if step.is_task:
            self.task_box.show_task(step, self.progress.task_state(self.session.lesson, self.index))
        self.do_button.setVisible(not step.is_task)
        self.do_button.setEnabled(step.prediction is None or bool(record["predictions"]))
        self.back_button.setEnabled(self.index > 0)
        last = self.index == len(steps) - 1
        self.next_button.setText("Next lesson ▶" if last and self._next_lesson() else "Next ▶")
        self.next_button.setEnabled(not last or self._next_lesson() is not None)
        self._show_results()
        self.window_.show_panel(step_figure(self.session.lesson, self.index))
        for directive in step.of("highlight"):
            self._control(directive.args[0], None)

    def _answered(self) -> bool:
        return bool(self.progress.step_record(self.session.lesson, self.index)["predictions"])

    def _show_text(self) -> None:
        """The step's words; with a `@predict`, the reveal below it once answered."""
        step = self.step
        cites = self.session.lesson.settings.get("cites")
        text = step.text
        if step.reveal and (step.prediction is None or self._answered()):
            text += "\n\n" + step.reveal
        elif step.prediction is not None:
            text += "\n\n*Answer the question below first: the rest of the step follows.*"
        self.text.setMarkdown(lesson_markdown(text + (f"\n\n*Lecture notes: {cites}*"
                                                      if cites and self.index == 0 else "")))

    # -- the student's turn -------------------------------------------------------------------

    def answer(self, given) -> None:
        """The student's answer to the step's `@predict`: kept, judged, then the reveal."""
        lesson = self.session.lesson
        right = self.progress.predict(lesson, self.index, given)
        self.predict_box.show_result(given, right)
        self.do_button.setEnabled(True)
        self._show_text()
        self._show_course()

    def show_hint(self) -> None:
        lesson, state = self.session.lesson, self.progress.task_state(self.session.lesson, self.index)
        self.progress.note(lesson, self.index, hints=min(state.get("hints", 0) + 1, len(self.step.hints)))
        self.task_box.show_state(self.step, self.progress.task_state(lesson, self.index))

    def use_solution(self) -> None:
        """Show the task's solution and do it: its `@set`s, `@train`, `@decode`, then Check."""
        self.progress.note(self.session.lesson, self.index, solution=True)
        self.task_box.show_state(self.step, self.progress.task_state(self.session.lesson, self.index))
        self.do_step()

    def _adopt(self) -> None:
        """The checks measure what the student has now: the window's model, probe and controls."""
        state = self.window_.bus.state
        self.session.adopt(self.window_.controller.workspace, tuple(state.probe.text),
                           student_controls(self.window_, self.step))

    def _on_snapshot(self, snapshot) -> None:
        """While the student trains, a task's live checks on the trainer's snapshot (throttled)."""
        if (self.session is None or not self._student_training or not self.step.is_task
                or time.monotonic() - self._last_live < LIVE_CHECK_EVERY_S):
            return
        checks = self.step.of("check")
        if not all(d.args[0] in LIVE_CHECKS for d in checks):
            return
        self._last_live = time.monotonic()
        self._adopt()
        if (snapshot.source, snapshot.target) != tuple(self.session.probe):
            return
        self.session.live_snapshot = snapshot
        try:
            results = run_checks(self.session, checks, True)
        except UserError:
            return  # e.g. no attention yet: the Check after training says it
        finally:
            self.session.live_snapshot = None
        if all(r.passed for r in results):
            self._checked(self.index, results)
        elif self.index not in self.results or not any(r.passed for r in self.results[self.index]):
            self._show_results(results, live=True)

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

    def _show_results(self, results: list | None = None, live: bool = False) -> None:
        """One row per `@check` of the step: ✓ / ✗ with what was measured, on what, and where
        to look when not passed; … until checked (a task's goal is not spelled out)."""
        self.checks.clear()
        self.checks.setVisible(bool(self.step.of("check")))  # no empty box under a plain step
        if results is None:
            results = self.results.get(self.index, [])
        for i, directive in enumerate(self.step.of("check")):
            if i < len(results):
                self.checks.addItem(f"{'live: ' if live else ''}{'✓' if results[i].passed else '✗'} "
                                    f"{results[i].feedback}")
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
        if self._training_for is None and self.session is not None:
            # the student's own training: a task checks live while it runs, and once it stops
            was, self._student_training = self._student_training, state == "running"
            if was and state not in ("running", "paused") and self.step.is_task:
                self.session.weights_changed()
                self.check_step()
            return
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
        self._adopt()
        self.window_.controller.run_job(run_checks, self.session, checks, self.step.is_task,
                                        on_done=lambda results: self._checked(index, results),
                                        label="checking")

    def _checked(self, index: int, results: list) -> None:
        lesson = self.session.lesson
        if tuple(self.session.probe) != tuple(self.window_.bus.state.probe.text):
            # a check chose the probe (beam_gain search=true): the window shows it too
            self.window_.bus.probe_requested.emit(*self.session.probe)
        self.results[index] = results
        step = lesson.steps[index]
        self.progress.checked(lesson, index, results, task=step.is_task)
        state = self.progress.task_state(lesson, index)
        if step.is_task and not all(r.passed for r in results) and state.get("hints", 0) < len(step.hints):
            # a failed check earns the next hint
            self.progress.note(lesson, index, hints=state.get("hints", 0) + 1)
        self._show_course()
        if index == self.index:
            self._show_results()
            if step.is_task:
                self.task_box.show_state(step, self.progress.task_state(lesson, index))

    def _set_enabled(self, on: bool) -> None:
        for button in (self.back_button, self.next_button, self.do_button, self.check_button,
                       self.handout_button, self.task_box.hint_button, self.task_box.solution_button):
            button.setEnabled(on)

    # -- handout ------------------------------------------------------------------------------

    def export_handout_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export the lesson's handout to")
        if folder:
            self.export_handout(Path(folder))

    def export_handout(self, folder: Path) -> list[Path]:
        """Every step's figure (the panel it shows, as the app draws it now, with the step's
        `@set`s) and text, the student's predictions, tasks and checks, plus handout.md /
        handout.html / handout.pdf, into `folder`: their hand-in."""
        from explorer.lessons.handout import write_handout
        from explorer.ui.lesson_controls import set_control
        from explorer.ui.lesson_figures import write_pdf

        lesson, figures = self.session.lesson, {}
        for index in range(len(lesson.steps)):
            panel_id = step_figure(lesson, index)
            panel = self.window_.panels.get(panel_id)
            if panel is None or not panel.has_content():
                continue
            for name, value in panel_controls(lesson, index, panel_id, solutions=False).items():
                set_control(panel, name, value)
            figures[index] = panel.export(folder / f"step-{index + 1:02d}", ("png", "svg"))
        written = write_handout(lesson, folder, figures, self.results, self.progress)
        return [*written, write_pdf(written[1])]


def arrange_lesson_panels(window, panel_ids: list[str], layout: str, lesson_dock) -> None:
    """The lesson's panels beside its dock (tabbed, in columns or in rows), above the training
    controls; the other panels leave the layout. View ▸ Reset layout brings the usual one back."""
    docks = [window.docks[p] for p in panel_ids if p in window.docks]
    for panel_id, dock in window.docks.items():
        if panel_id not in panel_ids:
            window.removeDockWidget(dock)
    window.addDockWidget(Qt.LeftDockWidgetArea, lesson_dock)  # the whole left column: its words
    if not docks:
        window.splitDockWidget(lesson_dock, window.controls_dock, Qt.Vertical)
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
    # the training controls a tab beside the panels (the toolbar's Train / Pause / Step / Stop stay
    # in sight): the lesson keeps the whole left column for its words, question and feedback
    window.tabifyDockWidget(docks[0], window.controls_dock)
    docks[0].raise_()
    window.resizeDocks([lesson_dock], [max(300, window.width() // 3)], Qt.Horizontal)
