"""A lesson as a handout: every step's text, check results and figures on one Markdown and one
HTML page beside the figure files (for slides and course pages). With the student's progress it
is their hand-in: each step's prediction (their answer, right or not, and why), each task's
attempts, hints, solution and results, next to the figures of their own model. No Qt: the figures
(and the PDF, explorer.ui.lesson_figures) are written by whoever draws them and passed in."""

from __future__ import annotations

import html
from pathlib import Path

from explorer.durable import write_text_file
from explorer.lessons.format import Lesson


def _relative(path: Path, folder: Path) -> str:
    return Path(path).resolve().relative_to(folder.resolve()).as_posix()


def _work(step, record: dict) -> list[str]:
    """The student's work in one step as plain lines (Markdown and HTML add their marks)."""
    lines = []
    prediction = step.prediction
    if prediction is not None:
        answered = record.get("predictions")
        lines.append(f"Prediction: {prediction.question}")
        if answered:
            first = prediction.shown(answered["first"])
            lines.append(f"Your prediction: {first} — {'right' if answered['first_right'] else 'not right'}"
                         f" (the answer: {prediction.right_answer}; {answered['attempts']} answer(s))")
        else:
            lines.append(f"Not answered (the answer: {prediction.right_answer})")
        if prediction.why:
            lines.append(f"Why: {prediction.why}")
    if step.is_task:
        task = record.get("tasks") or {}
        lines.append(f"Task: {step.goal}")
        if task.get("attempts"):
            how = " with the solution" if task.get("solution") else ""
            lines.append(f"{'Reached' if task.get('passed') else 'Not reached yet'}{how} after "
                         f"{task['attempts']} check(s), {task.get('hints', 0)} hint(s) seen")
        else:
            lines.append("Not tried yet")
    return lines


def write_handout(lesson: Lesson, folder: Path, figures: dict[int, list[Path]],
                  results: dict[int, list] | None = None, progress=None) -> list[Path]:
    """handout.md and handout.html in `folder`; `figures[i]` are step i's image files (PNG/SVG;
    the page shows the PNGs and links the SVGs), `results[i]` its CheckResults, `progress` the
    student's (explorer.lessons.progress.Progress): their predictions, tasks and checks."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    results = results or {}
    md = [f"# {lesson.title}", ""]
    page = [f"<h1>{html.escape(lesson.title)}</h1>"]
    cites = lesson.settings.get("cites")
    if cites:
        md += [f"*Lecture notes: {cites}*", ""]
        page.append(f"<p><em>Lecture notes: {html.escape(str(cites))}</em></p>")
    if lesson.intro:
        md += [lesson.intro, ""]
        page.append(f"<p>{html.escape(lesson.intro)}</p>")
    if progress is not None:
        done, total = progress.summary(lesson)
        md += [f"**Progress: {done} of {total}** (predictions answered, tasks reached, checks passed)", ""]
        page.append(f"<p class='progress'><b>Progress: {done} of {total}</b> (predictions answered, "
                    "tasks reached, checks passed)</p>")
    for index, step in enumerate(lesson.steps):
        text = "\n\n".join(part for part in (step.text, step.reveal) if part)
        md += [f"## {index + 1}. {step.title}", "", text, ""]
        page.append(f"<h2>{index + 1}. {html.escape(step.title)}</h2>")
        page += [f"<p>{html.escape(par)}</p>" for par in text.split("\n\n") if par.strip()]
        record = progress.step_record(lesson, index) if progress is not None else {}
        work = _work(step, record)
        if work:
            md += [f"> {line}  " for line in work] + [""]
            page.append("<blockquote class='work'>" + "<br>".join(html.escape(line) for line in work)
                        + "</blockquote>")
        saved = [(row["passed"], row["line"]) for row in (record.get("checks") or [])]
        rows = [(r.passed, r.feedback) for r in results.get(index, [])] or saved
        for passed, line in rows:
            mark = "✓" if passed else "✗"
            md.append(f"- {mark} `{line}`")
            page.append(f"<p class='check'>{mark} <code>{html.escape(line)}</code></p>")
        for figure in figures.get(index, []):
            name = _relative(figure, folder)
            if figure.suffix == ".png":
                md += ["", f"![{step.title}]({name})"]
                page.append(f"<img src='{html.escape(name)}' alt='{html.escape(step.title)}'>")
            elif figure.suffix == ".svg":
                md += ["", f"[SVG]({name})"]
                page.append(f"<p><a href='{html.escape(name)}'>SVG</a></p>")
        md.append("")
    markdown = write_text_file(folder / "handout.md", "\n".join(md))  # a link there: replaced
    style = ("body{font-family:sans-serif;max-width:60em;margin:auto}img{max-width:100%}"
             "blockquote.work{background:#eef4ff;border-left:4px solid #3b6fd6;padding:4px 8px}")
    page_file = write_text_file(
        folder / "handout.html", f"<!doctype html><meta charset='utf-8'><title>"
        f"{html.escape(lesson.title)}</title><style>{style}</style>\n" + "\n".join(page) + "\n")
    return [markdown, page_file]
