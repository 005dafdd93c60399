"""Where `explorer train`'s options come from: a named recipe, then a `--config` file, then the flags
given on the command line, each overriding the one before.

A recipe or config file may hold any of train's options under their long names (`batch_size`), any
TrainConfig field (`eval_examples`, `weight_decay`, `time_limit`, ...) and any model config field
(`embed_dim`, `d_ff`, `max_len`, ...). Model fields the flags also set may use either name
(`num_layers` or `layers`). Unknown names and values of the wrong type are one-line errors.

Recipes ship in explorer/training/recipes/NAME.json:
    {"about": "...", "reached": {...what it scored, where, when...}, "options": {...}}
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from pathlib import Path
from typing import Any

from explorer.errors import UserError

RECIPES = Path(__file__).resolve().parent.parent / "training" / "recipes"
# The one table of train's flags that set a config field: flag -> (config, field), the config
# being "model" (a model flag applies to the families whose config has the field) or "train"
# (TrainConfig). A recipe or config file may name such a field by its flag or its field name.
FLAG_FIELDS = {
    "cell": ("model", "cell"), "attention": ("model", "attention"),
    "layers": ("model", "num_layers"), "hidden": ("model", "hidden_size"),
    "d_model": ("model", "d_model"), "heads": ("model", "num_heads"), "dropout": ("model", "dropout"),
    "steps": ("train", "steps"), "epochs": ("train", "epochs"),
    "batch_size": ("train", "batch_size"), "lr": ("train", "lr"), "clip": ("train", "clip"),
    "seed": ("train", "seed"), "device": ("train", "device"), "optimizer": ("train", "optimizer"),
    "schedule": ("train", "schedule"), "warmup": ("train", "warmup"),
    "label_smoothing": ("train", "label_smoothing"), "eval_every": ("train", "eval_every"),
    "precision": ("train", "precision"), "threads": ("train", "num_threads"),
    "context": ("train", "context"),
}
NOT_OPTIONS = ("config", "recipe", "command", "_module")  # argparse destinations that are not options


def flag_fields(kind: str) -> dict[str, str]:
    """Flag -> the field it sets of the `kind` config ("model" or "train")."""
    return {flag: field for flag, (config, field) in FLAG_FIELDS.items() if config == kind}


def flag_of_field(name: str) -> str:
    """The flag that sets config field `name` under another name (`num_layers` -> `layers`);
    else `name` itself."""
    return next((flag for flag, (_, field) in FLAG_FIELDS.items() if field == name), name)


def train_fields() -> dict[str, Any]:
    """TrainConfig field -> its type."""
    from explorer.training.config import TrainConfig

    return typing.get_type_hints(TrainConfig)


def model_fields() -> dict[str, Any]:
    """Every buildable family's config fields that declare a setting (but those the data sizes)
    -> type (seqmodels.settings)."""
    from explorer.families import families
    from seqmodels.settings import config_settings

    types: dict[str, Any] = {}
    for family in families().values():
        for name, (kind, spec) in config_settings(family.model.config_class).items():
            if not spec.sized_by_data:
                types[name] = kind
    return types


def flag_types(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Option destination -> the type its flag parses to (str when it has none)."""
    return {action.dest: action.type or str for action in parser._actions
            if action.dest not in NOT_OPTIONS and action.dest != "help"}


def _type_name(expected) -> str:
    args = [a for a in typing.get_args(expected) if a is not type(None)]
    if typing.get_origin(expected) is tuple:
        return f"a list of {len(args)} numbers"
    if args:
        return " or ".join(_type_name(a) for a in args) + " or null"
    return {int: "a whole number", float: "a number", str: "a string", bool: "true or false"}.get(
        expected, getattr(expected, "__name__", str(expected)))


def _fits(value, expected) -> bool:
    origin = typing.get_origin(expected)
    if origin is tuple:
        items = typing.get_args(expected)
        return isinstance(value, (list, tuple)) and len(value) == len(items) and all(
            _fits(v, t) for v, t in zip(value, items))
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, t) for t in typing.get_args(expected))
    if expected is type(None):
        return value is None
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if callable(expected) and expected is not str:  # a flag's parsing function (utf8_text, ...)
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    return isinstance(value, expected)


def option_types(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Every name a recipe or config may hold -> its type."""
    known = {**model_fields(), **train_fields()}
    for name in list(known):
        if flag_of_field(name) != name:  # named by its flag
            known.pop(name)
    known.update(flag_types(parser))
    return known


def read_options(path: Path, data: Any, types: dict[str, Any]) -> dict[str, Any]:
    """A JSON object of options, checked: names known, values of the right type."""
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object of options")
    options = {}
    for key, value in data.items():
        name = key.replace("-", "_")
        name = flag_of_field(name)
        options[name] = value
    unknown = sorted(set(options) - set(types))
    if unknown:
        raise UserError(f"{path}: unknown options: {', '.join(unknown)}")
    for name, value in options.items():
        if value is not None and not _fits(value, types[name]):
            raise UserError(f"{path}: {name} should be {_type_name(types[name])}, got "
                            f"{json.dumps(value)}")
    return options


def _load_json(path: Path) -> Any:
    from explorer.errors import read_json

    return read_json(path)


def recipe_names() -> list[str]:
    return sorted(p.stem for p in RECIPES.glob("*.json"))


def recipe_summaries() -> list[str]:
    """`name (BLEU 37.87 in 40 min)` for each shipped recipe, for --help."""
    summaries = []
    for name in recipe_names():
        reached = load_recipe(name).get("reached", {})
        summaries.append(f"{name} (BLEU {reached.get('bleu')} in {reached.get('budget_minutes')} min)")
    return summaries


def load_recipe(name: str) -> dict[str, Any]:
    """The recipe's whole file: about, reached and options."""
    path = RECIPES / f"{name}.json"
    if not path.is_file():
        raise UserError(f"unknown recipe {name!r}; choose one of {', '.join(recipe_names())}")
    return _load_json(path)


def gather(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Options from --recipe, then --config, then the flags given on the command line."""
    known = option_types(parser)
    options: dict[str, Any] = {}
    if getattr(args, "recipe", None):
        recipe = load_recipe(args.recipe)
        options.update(read_options(RECIPES / f"{args.recipe}.json", recipe.get("options"), known))
    if args.config:
        path = Path(args.config)
        options.update(read_options(path, _load_json(path), known))
    flags = {k: v for k, v in vars(args).items() if k in known and v is not None}
    return {**options, **flags}


def extra_fields(options: dict, kind: str, handled) -> dict[str, Any]:
    """The `kind` ("train" or "model") config fields among the options, but those in `handled`
    (the names train's own flag tables already turn into fields)."""
    names = train_fields() if kind == "train" else model_fields()
    return {k: v for k, v in options.items() if k in names and k not in handled}
