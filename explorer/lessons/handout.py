"""A lesson as a handout: every step's text, check results and figures on one Markdown and one
HTML page beside the figure files (for slides and course pages). No Qt: the figures are written
by whoever draws them (the headless runner or the app) and passed in as paths."""

from __future__ import annotations

import html
from pathlib import Path

from explorer.durable import write_text_file
from explorer.lessons.format import Lesson


def _relative(path: Path, folder: Path) -> str:
    return Path(path).resolve().relative_to(folder.resolve()).as_posix()


def write_handout(lesson: Lesson, folder: Path, figures: dict[int, list[Path]],
                  results: dict[int, list] | None = None) -> list[Path]:
    """handout.md and handout.html in `folder`; `figures[i]` are step i's image files (PNG/SVG;
    the page shows the PNGs and links the SVGs), `results[i]` its CheckResults."""
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
    for index, step in enumerate(lesson.steps):
        md += [f"## {index + 1}. {step.title}", "", step.text, ""]
        page.append(f"<h2>{index + 1}. {html.escape(step.title)}</h2>")
        page += [f"<p>{html.escape(par)}</p>" for par in step.text.split("\n\n") if par.strip()]
        for result in results.get(index, []):
            mark = "✓" if result.passed else "✗"
            md.append(f"- {mark} `{result.line}`")
            page.append(f"<p class='check'>{mark} <code>{html.escape(result.line)}</code></p>")
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
    style = "body{font-family:sans-serif;max-width:60em;margin:auto}img{max-width:100%}"
    page_file = write_text_file(
        folder / "handout.html", f"<!doctype html><meta charset='utf-8'><title>"
        f"{html.escape(lesson.title)}</title><style>{style}</style>\n" + "\n".join(page) + "\n")
    return [markdown, page_file]
