"""The lesson file: Markdown with a small front matter, read into plain data (no Qt, no torch).

    ---
    title: Vanishing and exploding gradients
    cites: Lecture 7, "Exploding and vanishing gradients"; a_h^100 = 13781
    task: brackets                 # or text: FILE / tsv: FILE / checkpoint: demo:NAME or DIR
    family: rnn-lm
    preset: tiny
    model.cell: rnn                # any field of the family's config
    train.lr: 0.003                # any TrainConfig field
    steps: 200                     # training steps of the lesson (the `@train` steps add up)
    compare.model.attention: none  # a second model, the same but for these fields
    panels: gradients, curves      # registered panel ids, in order
    layout: tabs                   # tabs | columns | rows
    probe: ((a)(b))                # the probe input (probe_target: a seq2seq target)
    ---
    # Title (optional)
    ## A step's title
    One screen of text: what to do, what to look for.
    @show gradients                # the panel this step shows and exports as its figure
    @set gradients.a_h 1.1         # set a control (`@highlight PANEL.CONTROL` only points at it)
    @train 100                     # train (or `@decode 5`: step the decoder) N steps
    @check recurrence_gradient a_h=1.1 steps=100 approx=13781 tol=0.001

A step can ask first (`@predict "QUESTION" choices="A|B|C" answer=2 why="..."`, or a number:
`answer=13781 tol=0.05`): the text above the `@predict` line is shown with the question, the text
below it (the reveal) once the student has answered. A step with `@task "GOAL"` is the student's
turn: its `@check`s measure the student's own model, probe and controls when they press Check; its
`@set`/`@train`/`@decode` are the solution, done only when they ask for it (`@solution "TEXT"
after=3`, offered after that many failed checks); `@hint "TEXT"` is shown after a failed check.

Directives are lines starting with `@`. Every error is one line naming the file and line.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from explorer.errors import UserError

LAYOUTS = ("tabs", "columns", "rows")
SCALAR_KEYS = ("title", "cites", "task", "text", "tsv", "checkpoint", "family", "preset", "steps",
               "panels", "layout", "probe", "probe_target", "seed", "compare.family")
PREFIX_KEYS = ("model.", "train.", "data.", "compare.model.", "compare.train.")
DIRECTIVES = ("show", "set", "highlight", "train", "decode", "check", "predict", "task", "hint",
              "solution")


@dataclass
class Directive:
    name: str  # one of DIRECTIVES
    args: list[str]  # positional words
    options: dict[str, object]  # key=value words, values parsed as numbers/bools where they are
    line: int

    def where(self, lesson: Lesson) -> str:
        return f"{lesson.path}:{self.line}"


DEFAULT_SOLUTION_AFTER = 3  # failed checks of a task before its solution is offered
DEFAULT_PREDICT_TOL = 0.1  # relative: a numeric prediction within 10% is right


@dataclass
class Prediction:
    """A `@predict`: a question with choices (answer = the right one's number, 1 = first) or a
    number (answer within the relative `tol`), and why the answer is what it is."""
    question: str
    choices: list[str]
    answer: float
    tol: float
    why: str
    line: int

    @classmethod
    def of(cls, directive: Directive) -> Prediction:
        options = directive.options
        choices = [c.strip() for c in str(options.get("choices", "")).split("|") if c.strip()]
        return cls(" ".join(directive.args), choices, float(options.get("answer", "nan")),
                   float(options.get("tol", DEFAULT_PREDICT_TOL)), str(options.get("why", "")),
                   directive.line)

    def is_right(self, given) -> bool:
        """`given`: a choice's number (1 = first) or a number."""
        try:
            value = float(given)
        except (TypeError, ValueError):
            return False
        if self.choices:
            return int(value) == int(self.answer)
        return abs(value - self.answer) <= self.tol * max(abs(self.answer), 1e-12)

    def shown(self, given) -> str:
        """An answer as the student reads it: the choice's words, or the number."""
        if self.choices:
            index = int(float(given)) - 1
            return self.choices[index] if 0 <= index < len(self.choices) else str(given)
        return f"{float(given):g}"

    @property
    def right_answer(self) -> str:
        return self.shown(self.answer)


@dataclass
class Step:
    title: str
    text: str  # Markdown, directives removed (with a `@predict`: the text above it)
    directives: list[Directive]
    line: int
    reveal: str = ""  # with a `@predict`: the text below it, shown once the student answered

    def of(self, name: str) -> list[Directive]:
        return [d for d in self.directives if d.name == name]

    def first(self, name: str) -> Directive | None:
        found = self.of(name)
        return found[0] if found else None

    @property
    def prediction(self) -> Prediction | None:
        directive = self.first("predict")
        return None if directive is None else Prediction.of(directive)

    @property
    def is_task(self) -> bool:
        return bool(self.of("task"))

    @property
    def goal(self) -> str:
        directive = self.first("task")
        return " ".join(directive.args) if directive else ""

    @property
    def hints(self) -> list[str]:
        return [" ".join(d.args) for d in self.of("hint")]

    @property
    def solution(self) -> tuple[str, int]:
        """The solution's words and the failed checks after which it is offered (default 3)."""
        directive = self.first("solution")
        if directive is None:
            return "", DEFAULT_SOLUTION_AFTER
        return " ".join(directive.args), int(directive.options.get("after", DEFAULT_SOLUTION_AFTER))

    @property
    def figure(self) -> str | None:
        """The panel this step shows (its last `@show`), None: the lesson's first panel."""
        shown = self.of("show")
        return shown[-1].args[0] if shown else None


@dataclass
class Lesson:
    path: Path
    settings: dict[str, object]  # front matter, dotted keys as written
    lines: dict[str, int]  # front-matter key -> its line number
    title: str
    intro: str
    steps: list[Step] = field(default_factory=list)

    @property
    def panels(self) -> list[str]:
        return _words(self.settings.get("panels", ""))

    @property
    def layout(self) -> str:
        return str(self.settings.get("layout", "tabs"))

    @property
    def probe(self) -> tuple[str, str]:
        return str(self.settings.get("probe", "")), str(self.settings.get("probe_target", ""))

    def section(self, prefix: str) -> dict[str, object]:
        """The front matter's `prefix.*` entries without the prefix (`model.`, `compare.train.`)."""
        return {k[len(prefix):]: v for k, v in self.settings.items()
                if k.startswith(prefix) and "." not in k[len(prefix):]}

    @property
    def has_compare(self) -> bool:
        return any(k.startswith("compare.") for k in self.settings)

    def error(self, line: int, message: str) -> UserError:
        return UserError(f"{self.path}:{line}: {message}")


def _words(text: object) -> list[str]:
    return [w.strip() for w in str(text).replace(",", " ").split() if w.strip()]


def parse_value(text: str) -> object:
    """`1e-3` -> float, `200` -> int, `true`/`false`, `null` -> None, quoted or bare text -> str
    (`none` stays a word: it is a value of several settings, e.g. model.attention)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "null":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _strip_comment(text: str) -> str:
    # a ` #` outside quotes starts a comment (values such as `((a)(b))` keep their brackets)
    quote = None
    for i, char in enumerate(text):
        if char in "\"'" and quote in (None, char):
            quote = None if quote else char
        elif char == "#" and quote is None and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text


def _front_matter(path: Path, lines: list[str]) -> tuple[dict, dict, int]:
    if not lines or lines[0].strip() != "---":
        raise UserError(f"{path}:1: a lesson starts with a front matter between two '---' lines")
    settings, where = {}, {}
    for number, raw in enumerate(lines[1:], start=2):
        text = _strip_comment(raw).strip()
        if text == "---":
            return settings, where, number
        if not text:
            continue
        key, colon, value = text.partition(":")
        key = key.strip()
        if not colon or not key or " " in key:
            raise UserError(f"{path}:{number}: malformed front matter line {raw.strip()!r} "
                            "(expected 'key: value')")
        if key not in SCALAR_KEYS and not key.startswith(PREFIX_KEYS):
            raise UserError(f"{path}:{number}: unknown front matter key {key!r}; use one of "
                            f"{', '.join(SCALAR_KEYS)} or {', '.join(p + '*' for p in PREFIX_KEYS)}")
        if key in settings:
            raise UserError(f"{path}:{number}: {key!r} is set twice (first on line {where[key]})")
        settings[key], where[key] = parse_value(value), number
    raise UserError(f"{path}:1: the front matter has no closing '---' line")


def _directive(path: Path, number: int, text: str) -> Directive:
    try:
        words = shlex.split(_strip_comment(text[1:]))
    except ValueError as exc:
        raise UserError(f"{path}:{number}: {exc}") from None
    if not words or words[0] not in DIRECTIVES:
        name = words[0] if words else ""
        raise UserError(f"{path}:{number}: unknown directive @{name}; use one of "
                        + ", ".join("@" + d for d in DIRECTIVES))
    args, options = [], {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if eq and key.isidentifier():
            options[key] = parse_value(value)
        else:
            args.append(word)
    return Directive(words[0], args, options, number)


def parse_lesson(text: str, path: str | Path = "<lesson>", problems: list[str] | None = None) -> Lesson:
    """The lesson; a malformed directive raises, or with `problems` is added to it and skipped."""
    path = Path(path)
    lines = text.splitlines()
    settings, where, body_start = _front_matter(path, lines)
    title, intro, steps = str(settings.get("title", path.stem)), [], []
    current: Step | None = None
    for number, raw in enumerate(lines[body_start:], start=body_start + 1):
        stripped = raw.strip()
        if stripped.startswith("## "):
            current = Step(stripped[3:].strip(), "", [], number)
            steps.append(current)
        elif stripped.startswith("# ") and current is None:
            title = stripped[2:].strip()
        elif stripped.startswith("@"):
            if current is None:
                raise UserError(f"{path}:{number}: a directive outside a step (start one with '## ')")
            try:
                current.directives.append(_directive(path, number, stripped))
            except UserError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
        elif current is None:
            intro.append(raw)
        elif current.of("predict"):
            current.reveal += raw + "\n"
        else:
            current.text += raw + "\n"
    for step in steps:
        step.text, step.reveal = step.text.strip(), step.reveal.strip()
    lesson = Lesson(path, settings, where, title, "\n".join(intro).strip(), steps)
    if not steps:
        raise UserError(f"{path}:{body_start}: the lesson has no steps (each starts with '## ')")
    return lesson


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the lesson ({exc.__class__.__name__})") from None


def read_lesson(path: str | Path) -> Lesson:
    """Parse and validate a lesson file (UserError naming the line on any mistake)."""
    from explorer.lessons.validate import validate

    path = Path(path)
    lesson = parse_lesson(_read_text(path), path)
    validate(lesson)
    return lesson


def lesson_problems(path: str | Path) -> list[str]:
    """Every problem of a lesson file, one line each naming the file and line (none: it is fine);
    a broken front matter or step structure is one problem, as nothing after it can be read."""
    from explorer.lessons.validate import problems as directive_problems

    path, found = Path(path), []
    try:
        lesson = parse_lesson(_read_text(path), path, found)
    except UserError as exc:
        return [*found, str(exc)]

    def line(message: str) -> int:
        number = message.removeprefix(f"{path}:").split(":", 1)[0]
        return int(number) if number.isdigit() else 0

    return sorted(found + directive_problems(lesson), key=line)


def course(folder: str | Path) -> list[Path]:
    """A folder of lessons is a course: its `*.md` files in name order."""
    folder = Path(folder)
    lessons = sorted(folder.glob("*.md"))
    if not lessons:
        raise UserError(f"{folder}: no lessons (*.md) in this folder")
    return lessons


def builtin_lessons() -> list[Path]:
    """The lessons shipped with the app (explorer/lessons/builtin/)."""
    return course(Path(__file__).with_name("builtin"))
