"""A lesson checked before anything runs: every mistake is one line naming the file's line."""

from __future__ import annotations

from explorer.errors import UserError
from explorer.lessons.checks import validate_check
from explorer.lessons.format import LAYOUTS, Lesson

DATA_KEYS = ("task", "text", "tsv", "checkpoint")
# Controls `@set` understands without a window (the probe input, live training settings);
# `@set PANEL.CONTROL` and `@highlight PANEL.CONTROL` name a panel's own control.
SESSION_CONTROLS = ("probe", "probe_target", "train.clip", "train.lr")


def _known_panels() -> list[str]:
    from explorer.ui.panels import panel_ids  # the registry only: no Qt

    return panel_ids()


def _count(lesson: Lesson, directive) -> int:
    if len(directive.args) != 1 or not directive.args[0].isdigit() or int(directive.args[0]) < 1:
        raise lesson.error(directive.line, f"@{directive.name} takes a number of steps, e.g. "
                                           f"@{directive.name} 100")
    return int(directive.args[0])


def validate(lesson: Lesson) -> None:
    settings, line = lesson.settings, lesson.lines
    sources = [key for key in DATA_KEYS if key in settings]
    if len(sources) != 1:
        at = line[sources[1]] if len(sources) > 1 else 1
        raise lesson.error(at, f"give exactly one of {', '.join(DATA_KEYS)} (got "
                               f"{', '.join(sources) or 'none'})")
    if "checkpoint" not in settings and "family" not in settings:
        raise lesson.error(line[sources[0]], "a lesson that trains names its model: family: ...")
    if "family" in settings:
        from explorer.families import family_names

        if settings["family"] not in family_names():
            raise lesson.error(line["family"], f"unknown family {settings['family']!r}; use one "
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
    for step in lesson.steps:
        for directive in step.directives:
            where = directive.where(lesson)
            if directive.name == "check":
                validate_check(directive.options, directive.args, where)
            elif directive.name in ("train", "decode"):
                _count(lesson, directive)
            elif directive.name == "show":
                if len(directive.args) != 1 or directive.args[0] not in lesson.panels:
                    named = " ".join(directive.args) or "(nothing)"
                    raise UserError(f"{where}: @show {named}: not a panel of this lesson; it shows "
                                    f"{', '.join(lesson.panels)}")
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
