"""Lessons: the file format's one-line errors, and every built-in lesson run headless from a
fresh start (its model trained or opened, every check passed, every step's figure exported)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from explorer.errors import UserError
from explorer.lessons.format import Prediction, builtin_lessons, read_lesson
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
    assert len(lessons) == 16
    for lesson in lessons:
        assert lesson.settings.get("cites") and all(step.text or step.reveal for step in lesson.steps)


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
@pytest.mark.parametrize("stem", ["02", "03", "04", "05", "06", "07", "09", "10", "11", "12",
                                  "13", "14", "15", "16"])
def test_builtin_lesson_runs_headless(stem, tmp_path):
    run_builtin(stem, tmp_path)


HOSTILE = """---
title: Hostile
task: brackets
family: rnn-lm
preset: tiny
model.cell: banana
model.nonsense: 3
train.lr: -1
train.bogus: 2
panels: gradients
---
## one
@predict "How big?" choices="a|b" answer=5
@check cell_gradient cell=rnn t=1 below=1
@hint "no task here"
@dance
## two
@task "Do a thing"
@solution after=x "text"
@show curves
@check recurrence_gradient a_h=@nowhere.slider above=1
"""


def test_validate_lists_every_problem_by_file_and_line(tmp_path):
    """A hostile lesson: every bad line is reported, each on one line naming the file and line,
    the model.* and train.* entries included; exit 2. A good lesson: ok, exit 0."""
    path = write(tmp_path, HOSTILE)
    done = subprocess.run([sys.executable, "-m", "explorer", "lesson", "validate", str(path)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()
    expected = {6: "model.cell", 7: "model.nonsense", 8: "train.lr", 9: "train.bogus",
                13: "answer=5", 15: "@hint goes with a @task", 16: "unknown directive @dance",
                19: "@solution after=", 20: "@show curves", 21: "panel 'nowhere'"}
    assert len(lines) == len(expected)
    for line, (number, words) in zip(lines, sorted(expected.items())):
        assert line.startswith(f"{path}:{number}: ") and words in line, line
    good = write(tmp_path, GOOD)
    done = subprocess.run([sys.executable, "-m", "explorer", "lesson", "validate", str(good)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"{good}: ok"


def test_a_prediction_is_right_by_choice_or_within_its_tolerance():
    from explorer.lessons.format import parse_lesson

    lesson = parse_lesson(GOOD.replace("@show positional", '''@predict "k?" choices="1|2|3" answer=2
@predict "n?" answer=13781 tol=0.01''').replace("## Shifts\n", "## Shifts\n") + "## Two\n@show positional\n")
    choice = lesson.steps[0].prediction
    assert choice.is_right(2) and not choice.is_right(3) and choice.shown(3) == "3"
    number = Prediction.of(lesson.steps[0].of("predict")[1])
    assert number.is_right(13781 * 1.009) and not number.is_right(13781 * 1.02)
    assert not number.is_right("thirteen")


def test_progress_is_saved_read_back_and_counted(tmp_path):
    from explorer.lessons.checks import CheckResult
    from explorer.lessons.handout import write_handout
    from explorer.lessons.progress import Progress

    lesson = read_lesson(by_name("01"))
    predict = next(i for i, s in enumerate(lesson.steps) if s.prediction)
    task = next(i for i, s in enumerate(lesson.steps) if s.is_task)
    progress = Progress(tmp_path / "data", lesson.path)
    assert progress.summary(lesson)[0] == 0
    assert not progress.predict(lesson, predict, 1) and progress.predict(lesson, predict, 3)
    failed = [CheckResult("recurrence_gradient", False, 2e4, "recurrence_gradient = 2e4: not yet"),
              CheckResult("recurrence_gradient", True, 2e4, "recurrence_gradient = 2e4: passed")]
    progress.checked(lesson, task, failed, task=True)
    progress.checked(lesson, task, [CheckResult("r", True, 1.0, "r = 1: passed")] * 2, task=True)
    again = Progress(tmp_path / "data", lesson.path)  # read back from the file
    record = again.step_record(lesson, predict)["predictions"]
    assert record["first"] == 1 and not record["first_right"] and record["right"] and record["attempts"] == 2
    assert again.task_state(lesson, task)["attempts"] == 2 and again.task_state(lesson, task)["passed"]
    total = sum(1 for s in lesson.steps if s.prediction) + sum(1 for s in lesson.steps if s.is_task) \
        + sum(len(s.of("check")) for s in lesson.steps if not s.is_task)
    assert again.summary(lesson) == (2, total)
    written = write_handout(lesson, tmp_path / "out", {}, {}, again)
    page = written[0].read_text(encoding="utf-8")
    assert "Your prediction: about 1 — not right (the answer: about 13,781; 2 answer(s))" in page
    assert "Reached after 2 check(s)" in page and f"Progress: 2 of {total}" in page
    again.path.write_text("{not json", encoding="utf-8")  # a damaged file: a fresh start
    assert Progress(tmp_path / "data", lesson.path).summary(lesson) == (0, total)


def test_bpe_merges_give_the_lectures_sentence_counted_by_hand():
    """Peter Piper picked a peck of pickled peppers: p e 4 times (Piper, peck, peppers twice),
    then c k 3 times (picked, peck, pickled); every merge removes one token per occurrence."""
    from explorer.analysis.bpe_steps import bpe_merges, merge_word

    steps = bpe_merges("Peter Piper picked a peck of pickled peppers", 6)
    assert [s.pair for s in steps[:2]] == [("p", "e"), ("c", "k")]
    assert [s.count for s in steps] == [4, 3, 2, 2, 2, 2]
    assert [s.num_tokens for s in steps] == [37 - 4, 33 - 3, 30 - 2, 28 - 2, 26 - 2, 24 - 2]
    assert steps[0].words[-1] == ("pe", "p", "pe", "r", "s")
    assert merge_word(("a", "a", "a"), ("a", "a")) == ("aa", "a")  # left to right, no overlaps
    assert bpe_merges("a b c", 3) == []  # one-letter words: nothing to merge


@pytest.mark.parametrize("length, bptt", [(19, 8), (16, 8), (7, 8), (13, 5), (12, 1)])
def test_bptt_reach_is_the_last_window(length, bptt):
    """The last token's gradient reaches the tokens of its own window, (T − 1) mod b + 1 of them,
    and with no truncation all T (a recurrent model feeds every earlier token forward)."""
    from explorer.analysis.truncation import gradient_reach
    from explorer.training import DataSpec, build_workspace

    workspace = build_workspace(DataSpec(task="brackets"), "rnn-lm", "tiny", 0, cell="gru")
    text = ("(a)(c)(d)(e)(f)(g)(a)" * 2)[:length]
    assert len(workspace.tokenizer.encode(text)) == length
    reach = gradient_reach(workspace, text, bptt)
    assert (reach > 0).sum() == (length - 1) % bptt + 1
    assert (reach[length - ((length - 1) % bptt + 1):] > 0).all()  # the last window, not another
    assert (gradient_reach(workspace, text, None) > 0).sum() == length


def test_bptt_reach_ignores_the_model_run_meanwhile_by_another_thread():
    """The app's live probe runs the model in its own thread, without gradients, while a lesson
    check measures the reach: the check reads only its own pass (it once failed with "One of the
    differentiated Tensors does not require grad" in lesson 13's task)."""
    import threading

    import torch

    from explorer.analysis.truncation import gradient_reach
    from explorer.training import DataSpec, build_workspace

    workspace = build_workspace(DataSpec(task="brackets"), "rnn-lm", "tiny", 0, cell="gru")
    text = "(a)(c)(d)(e)(f)(g)(a)"
    ids = torch.tensor([workspace.tokenizer.encode(text)])
    stop = threading.Event()

    def probe() -> None:
        with torch.no_grad():
            while not stop.is_set():
                workspace.model(ids)

    thread = threading.Thread(target=probe)
    thread.start()
    try:
        counts = {int((gradient_reach(workspace, text, 8) > 0).sum()) for _ in range(30)}
    finally:
        stop.set()
        thread.join()
    assert counts == {(len(text) - 1) % 8 + 1}


@pytest.mark.parametrize("bidirectional", [True, False])
def test_encoder_context_is_every_later_token_when_bidirectional(bidirectional):
    from explorer.analysis.truncation import encoder_dependence
    from explorer.training import DataSpec, build_workspace

    workspace = build_workspace(DataSpec(task="reverse"), "seq2seq", "tiny", 0,
                                bidirectional_encoder=bidirectional)
    for t in (1, 4, 10):
        assert encoder_dependence(workspace, "abcdefghij", t) == (10 - t if bidirectional else 0)


def test_every_lesson_probe_uses_only_tokens_its_model_knows():
    """No <unk> on a plot's axis: each built-in lesson's probe (source and target) encodes to
    known tokens of the lesson's own model (built or opened, not trained)."""
    from explorer.data.tokenizers import UNK_ID
    from explorer.lessons.session import LessonSession

    for path in builtin_lessons():
        lesson = read_lesson(path)
        session = LessonSession(lesson, {"steps": 0})
        for _event in session.open():
            pass
        source, target = session.probe
        workspace = session.workspace
        source_tokenizer = getattr(workspace, "src_tokenizer", None) or workspace.tokenizer
        unknown = [t for t, i in zip(source_tokenizer.tokens(source_tokenizer.encode(source)),
                                     source_tokenizer.encode(source)) if i == UNK_ID]
        unknown += [t for t, i in zip(workspace.tokenizer.tokens(workspace.tokenizer.encode(target)),
                                      workspace.tokenizer.encode(target)) if i == UNK_ID]
        assert source and not unknown, (path.name, source, target)


def test_the_readme_maps_the_seventeen_seed_concepts_to_lessons():
    from pathlib import Path

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| seed concept | lesson |"):].split("\n\n")[0].splitlines()[2:]
    concepts = {row.split("|")[1].strip(): row.split("|")[2].strip() for row in table}
    stems = {path.stem for path in builtin_lessons()}
    assert len(concepts) == 17 and set(concepts.values()) == stems
