"""Built-in synthetic tasks, generated at run time and deterministic from a seed.

    copy, reverse, sort   letters (3..12 of a..z) -> the same, reversed, sorted
    addition              "12+35" -> "47"
    dates                 "Wed 3 Mar 21", "March 3, 2021", ... -> "2021-03-03"
    translate-toy         an English-like sentence -> a verb-final language with agreement
    brackets              language modelling: text whose brackets and quotes close far later

`make_task(name, seed)` returns `Splits(train, val, test, kind)` of `(source, target)` pairs
(`target` is "" for the language-modelling task). Examples are unique across all three splits as
long as the task can produce enough distinct sources; splits are then disjoint.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from explorer.data.tasks.dates import dates_pair
from explorer.data.tasks.symbols import (
    addition_pair,
    brackets_pair,
    copy_pair,
    reverse_pair,
    sort_pair,
)
from explorer.data.tasks.translate_toy import translate_toy_pair
from explorer.errors import UserError

Pair = tuple[str, str]


@dataclass(frozen=True)
class TaskSpec:
    name: str
    kind: str  # "seq2seq" or "lm"
    description: str  # one line, for menus and --help
    tokenizer: str  # the default tokenizer kind: "char" or "word"
    generate: Callable[[random.Random], Pair] = field(repr=False, compare=False)


# The data's kind (not a model family, though one family shares the name): source-target pairs,
# or plain text for a language model. Compared by these names, never by the strings.
PAIRS, TEXT = "seq2seq", "lm"
DATA_KINDS = (TEXT, PAIRS)


@dataclass
class Splits:
    train: list[Pair]
    val: list[Pair]
    test: list[Pair]
    kind: str = PAIRS
    # Data read from files: one explorer.data.readers.ReadReport per file read (kept and skipped
    # lines), so that no caller drops lines silently. Generated tasks skip nothing and have none.
    reports: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.train) + len(self.val) + len(self.test)


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("copy", "seq2seq", "copy a string of letters (diagonal attention)", "char",
                 copy_pair),
        TaskSpec("reverse", "seq2seq", "reverse a string of letters (anti-diagonal attention)",
                 "char", reverse_pair),
        TaskSpec("sort", "seq2seq", "sort the letters of a string", "char", sort_pair),
        TaskSpec("addition", "seq2seq", "add two numbers: 12+35 -> 47", "char", addition_pair),
        TaskSpec("dates", "seq2seq", "human-written dates -> ISO dates: Wed 3 Mar 21 -> 2021-03-03",
                 "char", dates_pair),
        TaskSpec("translate-toy", "seq2seq",
                 "toy English -> a verb-final language with reordering and agreement", "word",
                 translate_toy_pair),
        TaskSpec("brackets", "lm", "language modelling of text whose brackets close far later",
                 "char", brackets_pair),
    )
}

DEFAULT_SIZES = {"n_train": 5000, "n_val": 500, "n_test": 500}
ATTEMPTS_PER_EXAMPLE = 20  # how hard to look for unseen sources before allowing repeats


def make_task(
    name: str,
    seed: int = 0,
    n_train: int = DEFAULT_SIZES["n_train"],
    n_val: int = DEFAULT_SIZES["n_val"],
    n_test: int = DEFAULT_SIZES["n_test"],
) -> Splits:
    """Train/val/test pairs of task `name`, the same for the same seed."""
    if name not in TASKS:
        raise UserError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    if min(n_train, n_val, n_test) < 0:
        raise UserError("split sizes must not be negative")
    spec = TASKS[name]
    # the task name joins the seed, so tasks with the same seed do not share a random stream
    rng = random.Random(f"{name}:{seed}")
    wanted = n_train + n_val + n_test
    pairs: list[Pair] = []
    seen: set[str] = set()
    attempts = 0
    while len(pairs) < wanted:
        source, target = spec.generate(rng)
        attempts += 1
        # a repeat is accepted only when fresh sources have become too hard to find
        if source not in seen or attempts > ATTEMPTS_PER_EXAMPLE * wanted:
            seen.add(source)
            pairs.append((source, target))
    return Splits(
        train=pairs[:n_train],
        val=pairs[n_train : n_train + n_val],
        test=pairs[n_train + n_val :],
        kind=spec.kind,
    )
