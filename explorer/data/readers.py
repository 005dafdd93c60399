"""Readers for the three kinds of training text, each optionally gzip-compressed.

* plain text, one sentence or passage per line (language models): `read_text`
* tab-separated parallel text, `source<TAB>target[<TAB>...]` (Tatoeba / Anki; extra columns are
  ignored): `read_tsv`
* two line-aligned files, as in Multi30k (`train.en` / `train.de`): `read_parallel`

Bad input (missing, binary or empty files, invalid UTF-8, a row without a target column, parallel
files of different lengths) raises `UserError` with one line naming the file and the line.
Nothing is dropped silently: blank lines are skipped, but counted in a `ReadReport` that the
`*_with_report` variants return next to the data.

Standard library only, so `explorer bleu` can use `read_lines` without importing torch.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from explorer.errors import UserError

GZIP_MAGIC = b"\x1f\x8b"


@dataclass
class ReadReport:
    """What a reader kept and what it skipped, with the reason for each skipped line."""

    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> number of lines
    source: str = ""  # the file(s) read, for the summary
    # path -> sha256 of its bytes as read: a checkpoint records them, so a resumed run can tell
    # that a file changed since
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """One line, e.g. `train.tsv: kept 980 lines, skipped 20 (15 blank, 5 blank target)`."""
        prefix = f"{self.source}: " if self.source else ""
        if not self.skipped:
            return f"{prefix}kept {self.kept} lines, skipped none"
        reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(self.skipped.items()))
        return f"{prefix}kept {self.kept} lines, skipped {self.total_skipped} ({reasons})"


def _read_raw(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory, not a text file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _decompress(path: Path, data: bytes) -> bytes:
    if data[:2] == GZIP_MAGIC:  # by content, so a misnamed .gz file still reads
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise UserError(f"{path}: corrupt gzip data ({exc})") from None
    elif path.suffix == ".gz":
        raise UserError(f"{path}: named .gz but is not gzip-compressed")
    return data


def _line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_lines(path: str | Path, allow_empty: bool = False) -> list[str]:
    """Every line of a UTF-8 text file (blank ones included), without line terminators."""
    return _read_lines(Path(path), allow_empty)[0]


def _read_lines(path: Path, allow_empty: bool = False) -> tuple[list[str], str]:
    """The lines and the sha256 of the bytes they came from."""
    raw = _read_raw(path)
    digest = hashlib.sha256(raw).hexdigest()
    data = _decompress(path, raw)
    if not data and not allow_empty:
        raise UserError(f"{path}: file is empty")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = _line_of(data, nul)
        raise UserError(f"{path}:{line}: binary data (NUL byte); expected UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of(data, exc.start)
        raise UserError(
            f"{path}:{line}: invalid UTF-8 (byte 0x{data[exc.start]:02x}); expected UTF-8 text"
        ) from None
    text = text.removeprefix("\ufeff")  # a byte-order mark is not part of the first sentence
    if not text:
        return [], digest
    # split on "\n" only: str.splitlines also splits on \x0b, \u2028, ... and shifts line numbers
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the terminator of the last line
    return [line.removesuffix("\r") for line in lines], digest


def looks_like_tsv(path: str | Path) -> bool:
    """True when the file's first non-blank line has a tab: source<TAB>target pairs, not plain text."""
    first = next((line for line in read_lines(path) if line.strip()), "")
    return "\t" in first


def read_text_with_report(path: str | Path) -> tuple[list[str], ReadReport]:
    """Non-blank lines of a text file, for language models, and what was skipped."""
    lines, digest = _read_lines(Path(path))
    report = ReadReport(source=str(path), digests={str(path): digest})
    texts = []
    skipped: Counter = Counter()
    for line in lines:
        if line.strip():
            texts.append(line)
        else:
            skipped["blank"] += 1
    report.kept, report.skipped = len(texts), dict(skipped)
    if not texts:
        raise UserError(f"{path}: has no non-blank lines")
    return texts, report


def read_text(path: str | Path) -> list[str]:
    return read_text_with_report(path)[0]


def _pairs_with_report(
    rows: list[tuple[int, str, str]], source: str, empty_message: str
) -> tuple[list[tuple[str, str]], ReadReport]:
    """Keep rows whose two sides are both non-blank; count the others by reason."""
    pairs = []
    skipped: Counter = Counter()
    for _, src, tgt in rows:
        src_blank, tgt_blank = not src.strip(), not tgt.strip()
        if src_blank and tgt_blank:
            skipped["blank"] += 1
        elif src_blank:
            skipped["blank source"] += 1
        elif tgt_blank:
            skipped["blank target"] += 1
        else:
            pairs.append((src.strip(), tgt.strip()))
    if not pairs:
        raise UserError(empty_message)
    return pairs, ReadReport(kept=len(pairs), skipped=dict(skipped), source=source)


def read_tsv_with_report(path: str | Path) -> tuple[list[tuple[str, str]], ReadReport]:
    """`source<TAB>target[<TAB>...]` rows (extra columns ignored) and what was skipped."""
    rows = []
    lines, digest = _read_lines(Path(path))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            rows.append((number, "", ""))
            continue
        columns = line.split("\t")
        if len(columns) < 2:
            raise UserError(
                f"{path}:{number}: expected source<TAB>target, found one column: {line[:40]!r}"
            )
        rows.append((number, columns[0], columns[1]))
    pairs, report = _pairs_with_report(rows, str(path),
                                       f"{path}: has no rows with both source and target")
    report.digests = {str(path): digest}
    return pairs, report


def read_tsv(path: str | Path) -> list[tuple[str, str]]:
    return read_tsv_with_report(path)[0]


def read_parallel_with_report(
    src_path: str | Path, tgt_path: str | Path
) -> tuple[list[tuple[str, str]], ReadReport]:
    """Two line-aligned files (line i of one translates line i of the other), and the skips."""
    (src_lines, src_digest), (tgt_lines, tgt_digest) = (
        _read_lines(Path(src_path)), _read_lines(Path(tgt_path)))
    if len(src_lines) != len(tgt_lines):
        src_shorter = len(src_lines) < len(tgt_lines)
        shorter, longer = (src_path, tgt_path) if src_shorter else (tgt_path, src_path)
        first_unpaired = min(len(src_lines), len(tgt_lines)) + 1
        raise UserError(
            f"{longer}:{first_unpaired}: parallel files differ in length "
            f"({src_path}: {len(src_lines)} lines, {tgt_path}: {len(tgt_lines)}); "
            f"this line has no partner in {shorter}"
        )
    rows = [(i + 1, s, t) for i, (s, t) in enumerate(zip(src_lines, tgt_lines))]
    pairs, report = _pairs_with_report(
        rows, f"{src_path} + {tgt_path}", f"{src_path}: no line pairs with both sides non-blank"
    )
    report.digests = {str(src_path): src_digest, str(tgt_path): tgt_digest}
    return pairs, report


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> list[tuple[str, str]]:
    return read_parallel_with_report(src_path, tgt_path)[0]
