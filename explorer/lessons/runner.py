"""`explorer lesson FILE.md --headless`: run a lesson without a window, from a fresh start.

It builds or opens what the lesson names, goes through its steps in order (set, train, decode,
check), exports each step's figure with the app's own panels (explorer.ui.headless_export) and
writes the handout. The report says which checks passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from explorer.lessons.format import Lesson
from explorer.lessons.session import LessonSession


@dataclass
class LessonReport:
    lesson: Lesson
    results: dict[int, list] = field(default_factory=dict)  # step index -> CheckResults
    figures: dict[int, list[Path]] = field(default_factory=dict)
    handout: list[Path] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for rows in self.results.values() for r in rows)

    def lines(self) -> list[str]:
        out = []
        for index, step in enumerate(self.lesson.steps):
            out.append(f"step {index + 1}: {step.title}")
            out += [f"  {'✓' if r.passed else '✗'} {r.line}" for r in self.results.get(index, [])]
            out += [f"  figure {p}" for p in self.figures.get(index, []) if p.suffix == ".png"]
        return out


def step_figure(lesson: Lesson, index: int) -> str:
    """The panel step `index` shows: its `@show`, else the one shown before it, else the first."""
    for step in reversed(lesson.steps[: index + 1]):
        if step.figure:
            return step.figure
    return lesson.panels[0]


def panel_controls(lesson: Lesson, index: int, panel: str, solutions: bool = True) -> dict[str, object]:
    """`@set PANEL.CONTROL VALUE`s of steps up to `index` for `panel` (later ones win); without
    `solutions`, not those of tasks (the student's own values stay in their figures)."""
    controls = {}
    for step in lesson.steps[: index + 1]:
        if step.is_task and not solutions:
            continue
        for directive in step.of("set"):
            target = directive.args[0]
            if target.startswith(panel + "."):
                controls[target.split(".", 1)[1]] = " ".join(directive.args[1:])
    return controls


def run_step(session: LessonSession, index: int, progress: Callable[[object], None] | None = None) -> list:
    """Do step `index`'s actions in order and return its CheckResults (a task's actions are its
    solution: headless, nobody else reaches the goal; a `@predict` waits for nobody)."""
    results = []
    for directive in session.lesson.steps[index].directives:
        if directive.name == "set":
            session.set_control(directive.args[0], " ".join(directive.args[1:]))
        elif directive.name == "train":
            for event in session.train(int(directive.args[0])):
                if progress:
                    progress(event)
        elif directive.name == "decode":
            session.decode(int(directive.args[0]))
        elif directive.name == "check":
            results.append(session.check(directive))
    return results


# (session, step index, folder, formats) -> the files written: the UI renders a step's figure
# (explorer.ui.lesson_figures.export_figure), so the caller that asks for figures passes it in
FigureExporter = Callable[[LessonSession, int, Path, tuple], list]


def run_lesson(lesson: Lesson, out: Path | None = None, overrides: dict | None = None,
               progress: Callable[[object], None] | None = None, formats=("png", "svg"),
               export_figure: FigureExporter | None = None, student=None) -> LessonReport:
    """Run every step; with `out`, export each step's figure to out/step-NN/ (through
    `export_figure`) and the handout (with `student`'s saved progress, a Progress, in it)."""
    if out is not None and export_figure is None:
        raise ValueError("run_lesson: exporting figures needs export_figure (explorer.ui.lesson_figures)")
    session = LessonSession(lesson, overrides)
    for event in session.open():
        if progress:
            progress(event)
    report = LessonReport(lesson)
    for index in range(len(lesson.steps)):
        report.results[index] = run_step(session, index, progress)
        if out is not None:
            report.figures[index] = export_figure(session, index, Path(out) / f"step-{index + 1:02d}",
                                                  tuple(formats))
    if out is not None:
        from explorer.lessons.handout import write_handout

        report.handout = write_handout(lesson, Path(out), report.figures, report.results, student)
    return report
