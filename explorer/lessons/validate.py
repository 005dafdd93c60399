"""A lesson checked before anything runs: every mistake is one line naming the file's line.

`problems(lesson)` lists every directive's and setting's problem (`explorer lesson validate`);
`validate(lesson)` raises the first one (opening a lesson).
"""

from __future__ import annotations

from explorer.errors import UserError
from explorer.lessons.checks import validate_check
from explorer.lessons.format import LAYOUTS, Lesson

DATA_KEYS = ("task", "text", "tsv", "checkpoint")
# Controls `@set` understands without a window (the probe input, live training settings);
# `@set PANEL.CONTROL` and `@highlight PANEL.CONTROL` name a panel's own control.
SESSION_CONTROLS = ("probe", "probe_target", "train.clip", "train.lr")
PREDICT_OPTIONS = {"choices", "answer", "tol", "why"}


def _known_panels() -> list[str]:
    from explorer.panel_registry import panel_ids

    return panel_ids()


def _count(lesson: Lesson, directive) -> int:
    if len(directive.args) != 1 or not directive.args[0].isdigit() or int(directive.args[0]) < 1:
        raise lesson.error(directive.line, f"@{directive.name} takes a number of steps, e.g. "
                                           f"@{directive.name} 100")
    return int(directive.args[0])


def validate(lesson: Lesson) -> None:
    found = problems(lesson)
    if found:
        raise UserError(found[0])


def problems(lesson: Lesson) -> list[str]:
    """Every problem of the lesson, one line each naming the file and line, in file order."""
    found: list[tuple[int, str]] = []

    def collect(check, *args) -> None:
        try:
            check(*args)
        except UserError as exc:
            message = str(exc)
            line = message.removeprefix(f"{lesson.path}:").split(":", 1)[0]
            found.append((int(line) if line.isdigit() else 0, message))

    collect(_settings, lesson)
    for key in lesson.settings:  # each model.* / train.* entry on its own line
        if key.startswith(("model.", "compare.model.")):
            family = "compare.family" if key.startswith("compare.") else "family"
            collect(_model_setting, lesson, key, family)
        elif key.startswith(("train.", "compare.train.")):
            collect(_train_setting, lesson, key)
    for step in lesson.steps:
        collect(_step, lesson, step)
        for directive in step.directives:
            collect(_directive, lesson, step, directive)
    return [message for _line, message in sorted(found, key=lambda row: row[0])]


def _settings(lesson: Lesson) -> None:
    settings, line = lesson.settings, lesson.lines
    sources = [key for key in DATA_KEYS if key in settings]
    if len(sources) != 1:
        at = line[sources[1]] if len(sources) > 1 else 1
        raise lesson.error(at, f"give exactly one of {', '.join(DATA_KEYS)} (got "
                               f"{', '.join(sources) or 'none'})")
    if "checkpoint" not in settings and "family" not in settings:
        raise lesson.error(line[sources[0]], "a lesson that trains names its model: family: ...")
    from explorer.families import family_names

    for key in ("family", "compare.family"):
        if key in settings and settings[key] not in family_names():
            raise lesson.error(line[key], f"unknown family {settings[key]!r}; use one "
                                          f"of {', '.join(family_names())}")
    if lesson.layout not in LAYOUTS:
        raise lesson.error(line["layout"], f"unknown layout {lesson.layout!r}; use one of "
                                           f"{', '.join(LAYOUTS)}")
    known = _known_panels()
    if not lesson.panels:
        raise lesson.error(line.get("panels", 1), "name the panels the lesson shows: panels: ...")
    for panel in lesson.panels:
        if panel not in known:
            raise lesson.error(line["panels"], f"unknown panel {panel!r}; use one of "
                                               f"{', '.join(known)}")
    steps = settings.get("steps", 0)
    if not isinstance(steps, int) or steps < 0:
        raise lesson.error(line["steps"], "steps: takes a whole number of training steps")


def _model_setting(lesson: Lesson, entry: str, family_key: str) -> None:
    """A `model.*` (`compare.model.*`) entry is a field of the family's config with a value it
    takes (checked on its own, so the error names the entry's line)."""
    from dataclasses import fields

    from explorer.families import family_names
    from seqmodels.config import make_config

    family = lesson.settings.get(family_key, lesson.settings.get("family"))
    key, value, at = entry.rsplit(".", 1)[1], lesson.settings[entry], lesson.lines[entry]
    if "checkpoint" in lesson.settings:
        raise lesson.error(at, f"{entry}: builds a model; a lesson on a checkpoint opens its own")
    if family not in family_names():
        return  # the family's own line says so
    preset = lesson.settings.get("preset") if family_key == "family" else None
    try:
        names = {f.name for f in fields(make_config(family, preset))}
    except (TypeError, ValueError) as exc:
        raise lesson.error(lesson.lines.get("preset", at), f"preset {preset!r}: "
                                                           f"{str(exc).splitlines()[0]}") from None
    if key not in names:
        raise lesson.error(at, f"{entry}: a {family} model has no setting {key!r}; it has "
                               f"{', '.join(sorted(names - {'family'}))}")
    try:
        make_config(family, preset, **{key: value})
    except (TypeError, ValueError) as exc:
        raise lesson.error(at, f"{entry}: {str(exc).splitlines()[0]}") from None


def _train_setting(lesson: Lesson, entry: str) -> None:
    from dataclasses import fields

    from explorer.lessons.session import LESSON_TRAIN_DEFAULTS
    from explorer.training import TrainConfig

    names = {f.name for f in fields(TrainConfig)}
    key, value, at = entry.rsplit(".", 1)[1], lesson.settings[entry], lesson.lines[entry]
    if key not in names:
        raise lesson.error(at, f"{entry}: training has no setting {key!r}; it has "
                               f"{', '.join(sorted(names))}")
    try:
        TrainConfig(**{**LESSON_TRAIN_DEFAULTS, key: value})
    except (TypeError, ValueError, UserError) as exc:
        raise lesson.error(at, f"{entry}: {str(exc).splitlines()[0]}") from None


def _step(lesson: Lesson, step) -> None:
    for name in ("predict", "task", "solution"):
        if len(step.of(name)) > 1:
            raise lesson.error(step.of(name)[1].line, f"a step has at most one @{name}")
    for name in ("hint", "solution"):
        if step.of(name) and not step.is_task:
            raise lesson.error(step.of(name)[0].line, f"@{name} goes with a @task in its step")
    if step.is_task and not step.of("check"):
        raise lesson.error(step.of("task")[0].line, "a @task needs a @check that says when it is "
                                                    "reached")


def _predict(lesson: Lesson, directive, where: str) -> None:
    options = directive.options
    if not directive.args:
        raise UserError(f'{where}: @predict needs its question: @predict "QUESTION" answer=...')
    unknown = sorted(set(options) - PREDICT_OPTIONS)
    if unknown:
        raise UserError(f"{where}: @predict has no option {unknown[0]!r}; it takes "
                        f"{', '.join(sorted(PREDICT_OPTIONS))}")
    answer = options.get("answer")
    if not isinstance(answer, (int, float)) or isinstance(answer, bool):
        raise UserError(f"{where}: @predict needs answer= (a number: the right choice's, 1 = "
                        "first, or the value)")
    if "choices" in options:
        choices = [c for c in str(options["choices"]).split("|") if c.strip()]
        if len(choices) < 2:
            raise UserError(f'{where}: @predict choices= lists at least two, e.g. choices="1|100"')
        if not isinstance(answer, int) or not 1 <= answer <= len(choices):
            raise UserError(f"{where}: @predict answer={answer} is not one of the {len(choices)} "
                            "choices (1 = first)")
        if "tol" in options:
            raise UserError(f"{where}: @predict tol= goes with a number, not with choices")
    tol = options.get("tol", 0.1)
    if not isinstance(tol, (int, float)) or tol < 0:
        raise UserError(f"{where}: @predict tol= is a relative tolerance, e.g. tol=0.1")


def _directive(lesson: Lesson, step, directive) -> None:
    where = directive.where(lesson)
    if directive.name == "check":
        validate_check(directive.options, directive.args, where)
        for key, value in directive.options.items():  # `@PANEL.CONTROL`: the student's value
            panel = value[1:].split(".")[0] if isinstance(value, str) and value.startswith("@") else None
            if panel not in (None, "probe") and panel not in lesson.panels:
                raise UserError(f"{where}: {key}={value}: panel {panel!r} is not among this "
                                f"lesson's panels ({', '.join(lesson.panels)})")
    elif directive.name in ("train", "decode"):
        _count(lesson, directive)
    elif directive.name == "show":
        if len(directive.args) != 1 or directive.args[0] not in lesson.panels:
            named = " ".join(directive.args) or "(nothing)"
            raise UserError(f"{where}: @show {named}: not a panel of this lesson; it shows "
                            f"{', '.join(lesson.panels)}")
    elif directive.name == "predict":
        _predict(lesson, directive, where)
    elif directive.name in ("task", "hint", "solution"):
        if not directive.args:
            raise UserError(f'{where}: @{directive.name} needs its words: @{directive.name} "..."')
        allowed = {"after"} if directive.name == "solution" else set()
        extra = sorted(set(directive.options) - allowed)
        if extra:
            raise UserError(f"{where}: @{directive.name} has no option {extra[0]!r}"
                            + (" (it takes after=N)" if allowed else "; quote its words"))
        after = directive.options.get("after", 1)
        if not isinstance(after, int) or after < 0:
            raise UserError(f"{where}: @solution after= is a number of failed checks, e.g. after=3")
    else:  # set / highlight
        _control(lesson, directive, where)


def _control(lesson: Lesson, directive, where: str) -> None:
    wanted = 2 if directive.name == "set" else 1
    if len(directive.args) < wanted:
        usage = "@set PANEL.CONTROL VALUE" if directive.name == "set" else "@highlight PANEL.CONTROL"
        raise UserError(f"{where}: expected {usage}")
    target = directive.args[0]
    if target in SESSION_CONTROLS:
        return
    panel = target.split(".")[0]
    if panel not in lesson.panels:
        raise UserError(f"{where}: @{directive.name} {target}: panel {panel!r} is not among this "
                        f"lesson's panels ({', '.join(lesson.panels)})")
