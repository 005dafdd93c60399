"""A student's progress through a course, kept in their data folder (no Qt: the app and the
headless runner pass the folder in; the app uses QStandardPaths' AppDataLocation/lessons).

One JSON file per course (the folder of its lessons), one entry per lesson by file name:

    {"08-bleu.md": {"predictions": {"2": {"answer": 3, "shown": "about 13,781", "right": true,
                                          "first": 1, "first_right": false, "attempts": 2}},
                    "checks": {"2": [{"line": "...", "passed": true}]},
                    "tasks": {"3": {"attempts": 2, "passed": true, "hints": 1, "solution": false}}}}

Written whole to a temporary file and moved over the old one, so a crash leaves the old file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from explorer.lessons.format import Lesson


def course_file(folder: Path, lesson_path: Path) -> Path:
    """The progress file of the course `lesson_path` belongs to (its folder)."""
    course = Path(lesson_path).resolve().parent
    key = hashlib.sha1(str(course).encode("utf-8")).hexdigest()[:10]
    return Path(folder) / f"{course.name}-{key}.json"


class Progress:
    """The progress of one course: read at creation, written after every change."""

    def __init__(self, folder: Path, lesson_path: Path) -> None:
        self.path = course_file(folder, lesson_path)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}  # none yet, or a damaged file: start afresh rather than fail the lesson
        self.data: dict = data if isinstance(data, dict) else {}

    def lesson(self, lesson: Lesson) -> dict:
        entry = self.data.setdefault(Path(lesson.path).name, {})
        for key in ("predictions", "checks", "tasks"):
            if not isinstance(entry.get(key), dict):
                entry[key] = {}
        return entry

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(self.data, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(temporary, self.path)

    # -- recording ----------------------------------------------------------------------------

    def predict(self, lesson: Lesson, index: int, given) -> bool:
        """Record an answer to step `index`'s @predict; the first answer is kept as the
        prediction, later ones count as attempts. Returns whether it is right."""
        prediction = lesson.steps[index].prediction
        right = prediction.is_right(given)
        entry = self.lesson(lesson)["predictions"].setdefault(str(index), {"attempts": 0})
        if "first" not in entry:
            entry["first"], entry["first_right"] = given, right
        entry.update(answer=given, shown=prediction.shown(given), right=right,
                     attempts=entry["attempts"] + 1)
        self.save()
        return right

    def checked(self, lesson: Lesson, index: int, results: list, task: bool) -> None:
        """Record a step's check results; for a task, one more attempt."""
        entry = self.lesson(lesson)
        before = entry["checks"].get(str(index), [])
        rows = [{"line": r.feedback, "passed": r.passed} for r in results]
        # a check once passed stays passed: the student's later experiments do not undo it
        for i, row in enumerate(rows):
            if i < len(before) and before[i].get("passed") and not row["passed"]:
                rows[i] = before[i]
        entry["checks"][str(index)] = rows
        if task:
            state = entry["tasks"].setdefault(str(index), {"attempts": 0, "passed": False,
                                                           "hints": 0, "solution": False})
            state["attempts"] += 1
            state["passed"] = state["passed"] or all(r.passed for r in results)
            state["last"] = [r.feedback for r in results]
        self.save()

    def task_state(self, lesson: Lesson, index: int) -> dict:
        return self.lesson(lesson)["tasks"].get(str(index), {"attempts": 0, "passed": False,
                                                            "hints": 0, "solution": False})

    def note(self, lesson: Lesson, index: int, **fields) -> None:
        """Mark a task's hints seen or its solution used (`hints=2`, `solution=True`)."""
        state = self.lesson(lesson)["tasks"].setdefault(str(index), self.task_state(lesson, index))
        state.update(fields)
        self.save()

    # -- reading ------------------------------------------------------------------------------

    def summary(self, lesson: Lesson) -> tuple[int, int]:
        """(done, total): predictions answered, tasks passed and checks passed of the lesson."""
        entry = self.data.get(Path(lesson.path).name, {})
        done = total = 0
        for index, step in enumerate(lesson.steps):
            key = str(index)
            if step.prediction is not None:
                total += 1
                done += key in entry.get("predictions", {})
            if step.is_task:
                total += 1
                done += bool(entry.get("tasks", {}).get(key, {}).get("passed"))
            else:
                checks = entry.get("checks", {}).get(key, [])
                total += len(step.of("check"))
                done += sum(bool(row.get("passed")) for row in checks[: len(step.of("check"))])
        return done, total

    def step_record(self, lesson: Lesson, index: int) -> dict:
        """What the student did in step `index`: prediction, checks, task (for the handout)."""
        entry = self.data.get(Path(lesson.path).name, {})
        key = str(index)
        return {name: entry.get(name, {}).get(key) for name in ("predictions", "checks", "tasks")}
