"""What a config field means, declared on the field itself: its label, tip, valid range or choices.

    embed_dim: int = setting(64, "embedding size", "Size of the token embeddings", low=1)

`check_setting` (the types and ranges of a config read from JSON or `--config`), `explorer train`'s
model options and the new-model dialog's rows all read this metadata, so a family's new field is
declared once, in its config class. A field without a setting (`family`) is no option.
This module imports no torch.
"""

from __future__ import annotations

import typing
from dataclasses import Field, dataclass, field, fields
from typing import Any, Callable, Mapping

MAX_SIZE = 2**31  # above any size a model can hold; the memory check refuses big ones with numbers


@dataclass(frozen=True)
class Setting:
    label: str  # the dialog's row name, e.g. "hidden size"
    tip: str  # one line, after the course notes
    low: float | None = None  # smallest valid value (numbers)
    high: float | None = None  # largest valid value (numbers)
    high_open: bool = False  # True: values must stay below `high` (a probability in [0, 1))
    # name -> one-line tip of every valid value (strings); a callable reads a registry when asked
    choices: Mapping[str, str] | Callable[[], Mapping[str, str]] | None = None
    advanced: bool = False  # the dialog keeps it under "Advanced"
    sized_by_data: bool = False  # set from the data's tokenizers (vocabulary sizes), not by hand
    # the name of a dialog widget with value()/set_value(v) that the UI registers for this field
    # (register_editor); None, or a name nothing registered: the widget for its type and range
    editor: str | None = None

    def choice_tips(self) -> dict[str, str]:
        choices = self.choices() if callable(self.choices) else self.choices
        return dict(choices or {})

    def problem(self, value: Any, kind: type) -> str | None:
        """Why `value` is not valid for a field of type `kind` (None: it is)."""
        if kind is bool:
            return None if isinstance(value, bool) else "not true or false"
        if kind in (int, float):
            numeric = isinstance(value, (int, float)) if kind is float else isinstance(value, int)
            if not numeric or isinstance(value, bool):
                return "not a whole number" if kind is int else "not a number"
            if self.low is not None and value < self.low:
                return f"below {self.low}"
            too_high = self.high is not None and (
                value >= self.high if self.high_open else value > self.high)
            if too_high:
                return f"{'not below' if self.high_open else 'above'} {self.high}"
            return None
        if not isinstance(value, kind):
            return f"not a {getattr(kind, '__name__', kind)}"
        tips = self.choice_tips()
        if tips and value not in tips:
            return f"not one of {', '.join(tips)}"
        return None


# editor name -> a callable making its widget: the UI registers its own with this table (the layer
# above registers with the one below), so a config class names no UI module
_EDITORS: dict[str, Callable[[], Any]] = {}


def register_editor(name: str, make: Callable[[], Any]) -> None:
    _EDITORS[name] = make


def editor_for(name: str | None) -> Callable[[], Any] | None:
    return _EDITORS.get(name) if name else None


def setting(default: Any, label: str, tip: str, **details: Any) -> Any:
    """A dataclass field with its `Setting` as metadata (`details`: Setting's other fields)."""
    return field(default=default, metadata={"setting": Setting(label, tip, **details)})


def setting_of(config_field: Field) -> Setting | None:
    return config_field.metadata.get("setting")


def config_settings(config_class: type) -> dict[str, tuple[type, Setting]]:
    """Field name -> (type, Setting) of every field of `config_class` that declares a setting, in
    field order."""
    hints = typing.get_type_hints(config_class)
    return {f.name: (hints[f.name], setting_of(f)) for f in fields(config_class) if setting_of(f)}


def check_setting(config) -> tuple[str, Any, str] | None:
    """(field, value, why) of the first field of `config` whose value its setting refuses; a
    field without a setting (`family`) is only checked for its type."""
    hints = typing.get_type_hints(type(config))
    for config_field in fields(config):
        kind, spec = hints[config_field.name], setting_of(config_field)
        if spec is None and kind not in (bool, int, float, str):
            continue
        value = getattr(config, config_field.name)
        problem = (spec or Setting(config_field.name, "")).problem(value, kind)
        if problem:
            return config_field.name, value, problem
    return None
