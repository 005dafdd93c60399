"""Lessons: the file format's one-line errors, and every built-in lesson run headless from a
fresh start (its model trained or opened, every check passed, every step's figure exported)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from explorer.errors import UserError
from explorer.lessons.format import builtin_lessons, read_lesson
from explorer.lessons.runner import run_lesson
from explorer.ui.lesson_figures import export_figure

GOOD = """---
title: A tiny lesson
checkpoint: demo:translate-toy-transformer
panels: positional, attention
---
## Shifts
@show positional
@check shift_residual k=3 below=1e-6
"""


def write(tmp_path, text: str):
    path = tmp_path / "lesson.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("broken, line, words", [
    (GOOD.replace("@check shift_residual", "@check no_such_check"), 8, "unknown check 'no_such_check'"),
    (GOOD.replace("panels: positional, attention", "panels: positional, nowhere"), 4, "unknown panel 'nowhere'"),
    (GOOD.replace("@show positional", "@show gradients"), 7, "not a panel of this lesson"),
    (GOOD.replace("title: A tiny lesson", "title A tiny lesson"), 2, "malformed front matter"),
    (GOOD.replace("title:", "colour:"), 2, "unknown front matter key 'colour'"),
    (GOOD.replace("k=3 below=1e-6", "k=3"), 8, "needs exactly one of below"),
    (GOOD.replace("@check shift_residual k=3", "@check sentence_bleu hyp=x"), 8, "needs refs="),
    (GOOD.replace("@show positional", "@train many"), 7, "@train takes a number of steps"),
    (GOOD.replace("@show", "@dance"), 7, "unknown directive @dance"),
    ("title: no front matter\n## step\n", 1, "front matter"),
])
def test_a_broken_lesson_is_one_line_naming_its_line(tmp_path, broken, line, words):
    path = write(tmp_path, broken)
    with pytest.raises(UserError) as error:
        read_lesson(path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}:{line}:") and words in message


def test_the_cli_says_one_line_and_exits_2(tmp_path):
    path = write(tmp_path, GOOD.replace("@check shift_residual", "@check nope"))
    done = subprocess.run([sys.executable, "-m", "explorer", "lesson", str(path), "--headless"],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and f"{path}:8: unknown check" in done.stderr


def test_every_builtin_lesson_parses_and_names_the_lecture():
    lessons = [read_lesson(path) for path in builtin_lessons()]
    assert len(lessons) == 11
    for lesson in lessons:
        assert lesson.settings.get("cites") and all(step.text for step in lesson.steps)


def by_name(stem: str):
    return next(p for p in builtin_lessons() if p.stem.startswith(stem))


def run_builtin(stem: str, out):
    """The built-in lesson run headless from a fresh start, every check passed, every step's
    figure exported, the handout written. Each lesson runs once in the suite: the tests of its
    numbers read this run."""
    report = run_lesson(read_lesson(by_name(stem)), out, export_figure=export_figure)
    failed = [r.line for rows in report.results.values() for r in rows if not r.passed]
    assert not failed, failed
    for index, step in enumerate(report.lesson.steps):
        pngs = [p for p in report.figures[index] if p.suffix == ".png"]
        assert pngs and all(p.stat().st_size > 1000 for p in pngs), step.title
    page = (out / "handout.md").read_text(encoding="utf-8")
    assert all(step.title in page for step in report.lesson.steps)
    assert (out / "handout.html").is_file()
    return report


@pytest.mark.slow
def test_bleu_lesson_gives_the_lectures_numbers(tmp_path):
    """explorer.metrics.bleu against the notes' worked examples, computed here by hand."""
    by_step = run_builtin("08", tmp_path).results
    geometric = (5 / 8 * 4 / 7 * 3 / 6 * 2 / 5) ** 0.25 * 100
    assert by_step[2][1].value == pytest.approx(geometric, rel=1e-9)
    assert by_step[2][2].value == pytest.approx(math.exp(1 - 8 / 4), rel=1e-9)
    assert by_step[0][0].value == 3 and by_step[0][1].value == 6


@pytest.mark.slow
def test_gradients_lesson_gives_13781(tmp_path):
    report = run_builtin("01", tmp_path)
    assert round(report.results[0][0].value) == round(1.1 ** 100) == 13781
    assert report.results[1][1].value == pytest.approx(0.9 ** 100, rel=1e-9)  # the notes' 0.0000266


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["02", "03", "04", "05", "06", "07", "09", "10", "11"])
def test_builtin_lesson_runs_headless(stem, tmp_path):
    run_builtin(stem, tmp_path)
