"""From a description of the data and the model to a ready Workspace.

    spec = DataSpec(task="dates")  # or text=, tsv=, src= + tgt= (+ val_src= + val_tgt=)
    workspace = build_workspace(spec, "seq2seq", preset="tiny", attention="additive")

Reading the data, fitting tokenizers on the training split only, sizing the model's vocabularies
from them and building the model all happen here, for `explorer train` and the app's dialogs alike.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields
from typing import Any

from explorer.data.tasks import TEXT
from explorer.errors import UserError, first_line
from explorer.families import get_family

# What the app builds when a new model and the current data (or new data and the current model)
# do not fit together: the data kind ("lm" or "seq2seq") picks a task or a family.
DEFAULT_TASKS = {"lm": "brackets", "seq2seq": "reverse"}
DEFAULT_FAMILIES = {"lm": "rnn-lm", "seq2seq": "seq2seq"}
# `explorer train` without --arch: a GPT for text (the CLI's users bring real text), else seq2seq
TRAIN_DEFAULT_FAMILIES = {"lm": "gpt", "seq2seq": "seq2seq"}


@dataclass
class DataSpec:
    """Where the data comes from: a built-in task, or files (plain text for LMs, else pairs)."""

    task: str | None = None  # a name in explorer.data.tasks.TASKS
    text: str | None = None  # plain text, one passage per line (language models)
    tsv: str | None = None  # source<TAB>target lines (seq2seq)
    src: str | None = None  # line-aligned source and target files (seq2seq)
    tgt: str | None = None
    val_src: str | None = None  # optional validation files; otherwise val_fraction is held out
    val_tgt: str | None = None
    tokenizer: str | None = None  # char, word or bpe; None = the task's own (files: char for LMs,
    vocab_size: int | None = None  # word for pairs)
    val_fraction: float = 0.1  # LM text: the last lines; pairs: a seeded random share
    seed: int = 0  # task generation and the held-out split
    n_train: int | None = None  # task sizes; None = the task's defaults
    n_val: int | None = None

    def __post_init__(self) -> None:
        sources = [self.task is not None, self.text is not None, self.tsv is not None,
                   self.src is not None or self.tgt is not None]
        if sum(sources) != 1:
            raise UserError("give exactly one data source: a task, a text file, a TSV file, or "
                            "--src and --tgt files")
        if (self.src is None) != (self.tgt is None):
            raise UserError("--src and --tgt go together")
        if (self.val_src is None) != (self.val_tgt is None):
            raise UserError("--val-src and --val-tgt go together")
        if not 0 < self.val_fraction < 1:
            raise UserError(f"val_fraction must be in (0, 1), got {self.val_fraction}")

    @property
    def kind(self) -> str:
        """"lm" or "seq2seq"."""
        if self.task is not None:
            from explorer.data.tasks import TASKS

            if self.task not in TASKS:
                raise UserError(f"unknown task {self.task!r}; choose one of {', '.join(TASKS)}")
            return TASKS[self.task].kind
        return "lm" if self.text is not None else "seq2seq"

    def default_tokenizer(self) -> str:
        if self.tokenizer is not None:
            return self.tokenizer
        if self.task is not None:
            from explorer.data.tasks import TASKS

            return TASKS[self.task].tokenizer
        return "char" if self.kind == TEXT else "word"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _held_out(items: list, fraction: float, shuffle_seed: int | None) -> tuple[list, list]:
    """Split off `fraction` of `items` as validation: the end, or a seeded random share."""
    if len(items) < 2:
        raise UserError(f"need at least 2 examples to hold out validation data, got {len(items)}")
    items = list(items)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(items)
    n_val = max(1, round(len(items) * fraction))
    return items[:-n_val], items[-n_val:]


def _split_text(text: str, fraction: float) -> list[str]:
    """One line of LM text as two pieces, the last `fraction` of its characters second: a language
    model reads text as one stream of blocks, so its lines are no examples to hold out."""
    cut = len(text) - max(1, round(len(text) * fraction))
    if cut < 1:
        raise UserError(f"need at least 2 characters of text to hold out validation data, "
                        f"got {len(text)}")
    return [text[:cut], text[cut:]]


def read_data(spec: DataSpec):
    """The spec's explorer.data.tasks.Splits: (source, target) pairs, target "" for LM text, with a
    ReadReport per file read in `splits.reports`."""
    from explorer.data import readers
    from explorer.data.tasks import DEFAULT_SIZES, Splits, make_task

    if spec.task is not None:
        sizes = {"n_train": spec.n_train or DEFAULT_SIZES["n_train"],
                 "n_val": spec.n_val or DEFAULT_SIZES["n_val"]}
        return make_task(spec.task, seed=spec.seed, **sizes)
    if spec.text is not None:
        lines, report = readers.read_text_with_report(spec.text)
        if len(lines) == 1:  # one stream of text, not examples: hold out its end, as nanoGPT does
            lines = _split_text(lines[0], spec.val_fraction)
        train, val = _held_out([(line, "") for line in lines], spec.val_fraction, None)
        return Splits(train, val, [], kind="lm", reports=[report])
    if spec.tsv:
        pairs, report = readers.read_tsv_with_report(spec.tsv)
    else:
        pairs, report = readers.read_parallel_with_report(spec.src, spec.tgt)
    if spec.val_src is not None:
        val, val_report = readers.read_parallel_with_report(spec.val_src, spec.val_tgt)
        return Splits(pairs, val, [], reports=[report, val_report])
    train, val = _held_out(pairs, spec.val_fraction, spec.seed)
    return Splits(train, val, [], reports=[report])


def fit_tokenizers(spec: DataSpec, splits):
    """(target or LM tokenizer, source tokenizer or None), fitted on the training split only."""
    from explorer.data.tokenizers import make_tokenizer

    kind = spec.default_tokenizer()
    try:
        if splits.kind == TEXT:
            return make_tokenizer(kind, [s for s, _ in splits.train], spec.vocab_size), None
        target = make_tokenizer(kind, [t for _, t in splits.train], spec.vocab_size)
        source = make_tokenizer(kind, [s for s, _ in splits.train], spec.vocab_size)
    except ValueError as exc:
        raise UserError(f"cannot build the {kind} tokenizer: {exc}") from None
    return target, source


def build_model_config(family: str, preset: str | None, tokenizer, src_tokenizer, **overrides):
    from seqmodels.config import make_config, with_vocab

    try:
        config = make_config(family, preset, **overrides)
    except (TypeError, ValueError) as exc:
        raise UserError(first_line(exc)) from None
    src_vocab = None if src_tokenizer is None else src_tokenizer.vocab_size
    config = with_vocab(config, tokenizer.vocab_size, src_vocab)
    from explorer.training.weights_file import check_model_size  # issue 16: before allocating

    check_model_size(config)
    return config


def build_workspace(data: DataSpec, family: str, preset: str | None = None, seed: int = 0,
                    **model_overrides: Any):
    """A fresh, untrained Workspace for `family` on `data`; `seed` seeds the initial weights."""
    import torch

    from explorer.workspace import Workspace
    from seqmodels.config import build_model

    kind, reads = data.kind, data_kind(family)  # an unknown family is a UserError here
    if reads != kind:
        needs = "plain text or an LM task (brackets)" if reads == "lm" else "pairs"
        raise UserError(f"a {family} model needs {needs}, but the data is {kind} data")
    splits = read_data(data)
    tokenizer, src_tokenizer = fit_tokenizers(data, splits)
    config = build_model_config(family, preset, tokenizer, src_tokenizer, **model_overrides)
    torch.manual_seed(seed)
    model = build_model(config)
    return Workspace(model=model, tokenizer=tokenizer, src_tokenizer=src_tokenizer, task=data.task,
                     data=splits, data_spec=data)


def data_kind(family: str) -> str:
    """The kind of data a family reads: "lm" (one stream of text) or "seq2seq" (pairs)."""
    return "lm" if get_family(family).is_lm else "seq2seq"


def model_overrides(config) -> dict[str, Any]:
    """A config's settings as `build_workspace` overrides: all but the family and the vocabulary
    sizes, which the new data's tokenizers set."""
    return {k: v for k, v in asdict(config).items()
            if k not in ("family", "vocab_size", "src_vocab_size")}


def next_workspace(model_config=None, data: DataSpec | None = None, current=None):
    """The app's "new model" (a config, data None) and "new data" (a DataSpec, config None): a
    fresh workspace. A new model keeps the current workspace's data when its kind fits, else a
    default task; new data keeps the current architecture when it can read it, else a default
    family at the tiny preset; a model opened from elsewhere (an HF folder) keeps its weights."""
    if model_config is None:
        config = getattr(getattr(current, "model", None), "config", None)
        attach = None if config is None else get_family(config.family).attach_data
        if attach is not None:  # an opened Hugging Face model is kept and fine-tuned on the data
            return attach(current, data)
        if config is None or data_kind(config.family) != data.kind:
            return build_workspace(data, DEFAULT_FAMILIES[data.kind], preset="tiny")
        model_config = config
    elif data is None:
        kind = data_kind(model_config.family)
        current_data = getattr(current, "data_spec", None)
        fits = current_data is not None and current_data.kind == kind
        data = current_data if fits else DataSpec(task=DEFAULT_TASKS[kind])
    return build_workspace(data, model_config.family, **model_overrides(model_config))
