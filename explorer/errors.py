"""Errors a user can act on: the CLI prints them as one line and exits 2, the app shows a dialog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class UserError(Exception):
    """Bad input or a request that cannot be met. The message is one line and names the culprit."""


class SettingsError(UserError):
    """A request smaller training settings would meet: `settings` names the TrainConfig fields
    ("batch_size", "context"). The message names them as the CLI's flags; the app names its
    Training dock's fields instead (explorer/ui/training_controls.py)."""

    def __init__(self, problem: str, settings: tuple[str, ...]) -> None:
        self.problem, self.settings = problem, settings
        flags = " or ".join("--" + name.replace("_", "-") for name in settings)
        super().__init__(f"{problem} (use a smaller {flags})")


def first_line(exc: BaseException, default: str | None = None) -> str:
    """The first line of an exception's message (tracebacks and details below it left out); for
    an empty message `default`, or the exception's type name."""
    text = str(exc).strip()
    if text:
        return text.splitlines()[0]
    return type(exc).__name__ if default is None else default


def read_json_object(path: str | Path) -> dict | None:
    """The JSON object in `path`, or None when it is missing, unreadable or holds anything else
    (a folder that may or may not be a run: no error to report)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_json(path: str | Path, missing: str | None = None) -> Any:
    """The JSON value in `path`; a UserError when the file is missing (`missing`, or "no such
    file") or does not hold valid JSON."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(missing or f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a JSON file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
