"""Filtering the Examples table: regular expressions over its text columns ("smart case", as
ripgrep: case-insensitive unless the pattern has a capital letter) and length ranges."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from explorer.errors import UserError

if TYPE_CHECKING:
    from explorer.analysis.examples import ExampleTable


@dataclass
class SliceFilter:
    """Rows whose text columns match the regular expressions (`re.search`; case-insensitive unless
    the pattern has a capital letter, see `ignores_case`) and whose length column lies in
    [min_length, max_length]. Empty patterns and None bounds match all."""

    patterns: dict[str, str] = field(default_factory=dict)  # column -> regular expression
    length_column: str = "source_length"
    min_length: int | None = None
    max_length: int | None = None

    def to_dict(self) -> dict:
        return {"patterns": dict(self.patterns), "length_column": self.length_column,
                "min_length": self.min_length, "max_length": self.max_length}

    @classmethod
    def from_dict(cls, data: dict) -> "SliceFilter":
        return cls(dict(data.get("patterns") or {}), data.get("length_column", "source_length"),
                   data.get("min_length"), data.get("max_length"))

    def compiled(self) -> dict[str, re.Pattern]:
        result = {}
        for name, pattern in self.patterns.items():
            if not pattern:
                continue
            try:
                result[name] = re.compile(pattern)
            except re.error as exc:
                raise UserError(f"the {name} filter {pattern!r} is not a regular expression: {exc}") from exc
        return result

    def rows(self, table: ExampleTable) -> np.ndarray:
        """Indices of the matching rows, in table order."""
        keep = np.ones(len(table), dtype=bool)
        for name, pattern in self.compiled().items():
            keep &= matches(table, name, pattern)
        if self.min_length is not None or self.max_length is not None:
            lengths = table.column(self.length_column)
            if self.min_length is not None:
                keep &= lengths >= self.min_length
            if self.max_length is not None:
                keep &= lengths <= self.max_length
        return np.flatnonzero(keep)


def ignores_case(pattern: str) -> bool:
    """Smart case, as in ripgrep and vim: a pattern without a capital letter (escapes such as \\S
    aside) finds its text in any case; one with a capital letter ("Hund") is case-sensitive.
    (A case-insensitive search is of the lowercased texts: re.IGNORECASE turns off the regex
    engine's literal-prefix scans and is 4 to 6 times slower.)"""
    return not any(c.isupper() for c in re.sub(r"\\.", "", pattern))


def matches(table: ExampleTable, name: str, pattern: re.Pattern) -> np.ndarray:
    """(N,) bool: the rows of column `name` that `pattern` finds something in (see
    `ignores_case`). Kept on the table per pattern, so changing another filter does not scan the
    texts again."""
    cache = table._matches
    key = (name, pattern.pattern)
    if key not in cache:
        if len(cache) >= 32:  # patterns typed one keystroke at a time: keep the recent ones only
            cache.clear()
        cache[key] = table.joined_texts(name, ignores_case(pattern.pattern)).search(pattern)
    return cache[key]


# a lookaround can see past a row's end in the joined text; \A and \Z mean the whole text there
_ROW_BOUND_SYNTAX = re.compile(r"\\[AZ]|\(\?<?[=!]")


class JoinedTexts:
    """A text column joined by newlines and searched in one pass of the regex engine, instead of
    one Python call per row: `re.sub` marks every match with a NUL, and numpy maps the marks to
    rows. Rows hold no newline, so with re.MULTILINE ^ and $ match at each row's ends as they do
    in that row alone. A match that takes a newline (a pattern that can match one: the text then
    has fewer lines), a lookaround (it could look across one) or a newline or NUL inside a text
    falls back to searching each row by itself, so the result is always `re.search`'s per row."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.text = "\n".join(texts)
        self.joinable = self.text.count("\n") == len(texts) - 1 and "\0" not in self.text

    def search(self, pattern: re.Pattern) -> np.ndarray:
        found = self._joined_search(pattern) if self.joinable else None
        if found is None:
            found = np.fromiter((pattern.search(t) is not None for t in self.texts), bool,
                                len(self.texts))
        return found

    def _joined_search(self, pattern: re.Pattern) -> np.ndarray | None:
        """The rows that match, or None where one pass over the joined text could differ."""
        if _ROW_BOUND_SYNTAX.search(pattern.pattern):
            return None
        try:  # a match takes the rest of its row too: one mark per row, and no scan of that rest
            whole_row = re.compile(f"(?:{pattern.pattern})[^\\n]*", pattern.flags | re.MULTILINE)
        except re.error:  # e.g. global flags such as (?i), which must open the expression
            return None
        marked = whole_row.sub("\0", self.text)
        if marked.count("\n") != len(self.texts) - 1:  # a match took a newline
            return None
        codes = np.frombuffer(marked.encode("utf-32-le"), dtype=np.uint32)  # one per character
        newlines, marks = np.flatnonzero(codes == 10), np.flatnonzero(codes == 0)
        found = np.zeros(len(self.texts), dtype=bool)
        found[np.searchsorted(newlines, marks)] = True  # a mark's row: the newlines before it
        return found
