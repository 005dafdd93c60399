"""`explorer lesson FILE.md|FOLDER`: open a lesson (or a course: a folder of lessons) in the app,
or run it headless (`--headless`): train, check every condition, export figures and a handout
(HTML, Markdown and PDF, with the student's saved progress). `explorer lesson validate FILE.md`
lists every problem of the lesson files, one line each naming the file and line."""

from __future__ import annotations

import argparse
import sys


def _override(text: str) -> tuple[str, object]:
    from explorer.lessons.format import parse_value

    key, eq, value = text.partition("=")
    if not eq or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), parse_value(value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="FILE.md|FOLDER", nargs="?",
                        help="a lesson file, or a folder of them (a course); "
                             "`builtin` names the lessons that ship with the app; "
                             "`validate FILE.md|FOLDER` lists every problem of the lessons")
    parser.add_argument("more", metavar="FILE.md", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--headless", action="store_true",
                        help="run without a window: every step's actions and checks, in order; "
                             "exit 1 when a check fails")
    parser.add_argument("--export", metavar="DIR", default=None,
                        help="with --headless: each step's figure (PNG, SVG) and handout.md/.html here")
    parser.add_argument("--set", dest="overrides", type=_override, action="append", default=[],
                        metavar="KEY=VALUE", help="override a front-matter entry, e.g. steps=50 "
                                                  "or train.lr=0.01 (repeatable)")
    parser.add_argument("--list", action="store_true",
                        help="list the built-in lessons and the checks lessons may use, and exit")


def _paths(path: str):
    from pathlib import Path

    from explorer.errors import UserError
    from explorer.lessons.format import builtin_lessons, course

    if path == "builtin":
        return builtin_lessons()
    target = Path(path)
    if target.is_dir():
        return course(target)
    if target.is_file():
        return [target]
    named = [p for p in builtin_lessons() if p.stem == path or p.stem.split("-", 1)[-1] == path]
    if named:  # a built-in lesson by name, from any folder: 08-bleu or bleu
        return named
    raise UserError(f"{path}: no such lesson file or folder, nor a built-in lesson "
                    "(explorer lesson --list names them)")


def _list() -> int:
    from explorer.lessons.checks import CHECKS
    from explorer.lessons.format import builtin_lessons, read_lesson

    print("built-in lessons:")
    for path in builtin_lessons():
        print(f"  {path.stem:28} {read_lesson(path).title}")
    print("checks (@check NAME option=... below=|above=|at_most=|at_least=|approx= [tol=]):")
    for check in CHECKS.values():
        print(f"  {check.name:24} {check.summary}")
    return 0


def _validate(names: list[str]) -> int:
    """Every problem of every named lesson (files, folders, built-in names) on stdout, one line
    each; exit 2 when there is one, 0 with "ok" per file when there is none."""
    from explorer.errors import UserError
    from explorer.lessons.format import lesson_problems

    if not names:
        raise UserError("explorer lesson validate FILE.md|FOLDER ...: name the lessons to check")
    paths = [path for name in names for path in _paths(name)]
    found = 0
    for path in paths:
        problems = lesson_problems(path)
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{path}: ok")
        found += len(problems)
    if found:
        print(f"explorer lesson validate: {found} problem(s) in {len(paths)} lesson(s)", file=sys.stderr)
    return 2 if found else 0


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from explorer.errors import UserError
    from explorer.lessons.format import read_lesson

    if args.list:
        return _list()
    if args.path == "validate":
        return _validate(args.more)
    if args.more:
        raise UserError(f"one lesson file or folder at a time (got {args.path} {' '.join(args.more)})")
    if not args.path:
        raise UserError("name a lesson file or folder (or `builtin`); --list lists them")
    if args.export and not args.headless:
        raise UserError("--export goes with --headless (in the app: File ▸ Export lesson handout)")
    paths = _paths(args.path)
    lessons = [read_lesson(p) for p in paths]  # every file checked before anything runs
    if not args.headless:
        from explorer.ui.app import ensure_display, run_app

        ensure_display(False)
        # a course (several lessons, one folder) opens as a course: every lesson listed
        return run_app(lesson=str(paths[0] if len(paths) == 1 else paths[0].parent))
    from explorer.lessons.progress import Progress
    from explorer.lessons.runner import run_lesson
    from explorer.ui.lesson_figures import export_figure, progress_folder, write_pdf

    failed = 0
    for lesson in lessons:
        out = Path(args.export) / lesson.path.stem if args.export and len(lessons) > 1 else args.export
        print(f"lesson {lesson.path.name}: {lesson.title}", flush=True)
        # the student's saved predictions and tasks go into the handout (read, never written:
        # a headless run reaches every task with its solution)
        student = Progress(progress_folder(), lesson.path) if out else None
        report = run_lesson(lesson, Path(out) if out else None, dict(args.overrides),
                            export_figure=export_figure, student=student)
        for line in report.lines():
            print(line, flush=True)
        failed += not report.passed
        if report.handout:
            report.handout.append(write_pdf(report.handout[1]))
            print(f"handout {report.handout[0]} (and .html, .pdf)")
    if failed:
        print(f"explorer lesson: {failed} lesson(s) with a check not passed", file=sys.stderr)
    return 1 if failed else 0
