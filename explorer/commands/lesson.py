"""`explorer lesson FILE.md|FOLDER`: open a lesson (or a course: a folder of lessons) in the app,
or run it headless (`--headless`): train, check every condition, export figures and a handout."""

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
                             "`builtin` names the lessons that ship with the app")
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


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from explorer.errors import UserError
    from explorer.lessons.format import read_lesson

    if args.list:
        return _list()
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
    from explorer.lessons.runner import run_lesson
    from explorer.ui.lesson_figures import export_figure

    failed = 0
    for lesson in lessons:
        out = Path(args.export) / lesson.path.stem if args.export and len(lessons) > 1 else args.export
        print(f"lesson {lesson.path.name}: {lesson.title}", flush=True)
        report = run_lesson(lesson, Path(out) if out else None, dict(args.overrides),
                            export_figure=export_figure)
        for line in report.lines():
            print(line, flush=True)
        failed += not report.passed
        if report.handout:
            print(f"handout {report.handout[0]}")
    if failed:
        print(f"explorer lesson: {failed} lesson(s) with a check not passed", file=sys.stderr)
    return 1 if failed else 0
