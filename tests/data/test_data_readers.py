"""Readers: the three input kinds, .gz, and one-line errors that name the file and the line."""

import gzip

import pytest

from explorer.data.readers import (
    ReadReport,
    looks_like_tsv,
    read_lines,
    read_parallel,
    read_parallel_with_report,
    read_text,
    read_text_with_report,
    read_tsv,
    read_tsv_with_report,
)
from explorer.errors import UserError


def write(path, text: str, compress: bool = False):
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
def test_plain_text_keeps_lines_and_counts_blank_ones(tmp_path, compress):
    name = "lm.txt.gz" if compress else "lm.txt"
    text = "First Citizen:\n\nBefore we proceed,\r\n  \nhear me speak."
    path = write(tmp_path / name, text, compress)
    texts, report = read_text_with_report(path)
    assert texts == ["First Citizen:", "Before we proceed,", "hear me speak."]
    assert (report.kept, report.skipped) == (3, {"blank": 2})
    assert report.summary() == f"{path}: kept 3 lines, skipped 2 (2 blank)"
    assert read_text(path) == texts


def test_tsv_ignores_extra_columns_and_reports_blank_sides(tmp_path):
    path = write(
        tmp_path / "fra.txt",
        "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org\n"
        "Hi.\tSalut !\n"
        "\n"
        "Run!\t\n"
        "Who?\tQui ?\n",
    )
    pairs, report = read_tsv_with_report(path)
    assert pairs == [("Go.", "Va !"), ("Hi.", "Salut !"), ("Who?", "Qui ?")]
    assert report.kept == 3 and report.skipped == {"blank": 1, "blank target": 1}
    assert "skipped 2 (1 blank, 1 blank target)" in report.summary()
    assert read_tsv(path) == pairs


def test_tsv_row_without_target_column_names_file_and_line(tmp_path):
    path = write(tmp_path / "pairs.tsv", "a\tb\nc\td\nno tab here\n")
    with pytest.raises(UserError, match=r"pairs\.tsv:3: expected source<TAB>target"):
        read_tsv(path)


@pytest.mark.parametrize("compress", [False, True])
def test_parallel_files_pair_lines(tmp_path, compress):
    suffix = ".gz" if compress else ""
    src = write(tmp_path / f"train.en{suffix}", "A dog runs.\n\nTwo men talk.\n", compress)
    tgt = write(tmp_path / f"train.de{suffix}", "Ein Hund rennt.\nNichts.\nZwei Männer reden.\n",
                compress)
    pairs, report = read_parallel_with_report(src, tgt)
    assert pairs == [("A dog runs.", "Ein Hund rennt."), ("Two men talk.", "Zwei Männer reden.")]
    assert report.skipped == {"blank source": 1} and report.kept == 2
    assert read_parallel(src, tgt) == pairs


def test_parallel_files_of_different_length_name_the_unpaired_line(tmp_path):
    src = write(tmp_path / "a.en", "one\ntwo\nthree\n")
    tgt = write(tmp_path / "a.de", "eins\nzwei\n")
    with pytest.raises(UserError) as info:
        read_parallel(src, tgt)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{src}:3: parallel files differ in length")
    assert "3 lines" in message and "2" in message


@pytest.mark.parametrize(
    "content, pattern",
    [
        (b"", r"empty\.txt: file is empty"),
        (b"fine\nstill fine\nbad \xc3\x28 here\n", r"empty\.txt:3: invalid UTF-8 \(byte 0xc3\)"),
        (b"text\n\x89PNG\x00\x00\x00", r"empty\.txt:2: binary data"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, content, pattern):
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    with pytest.raises(UserError, match=pattern) as info:
        read_text(path)
    assert "\n" not in str(info.value)


def test_only_blank_lines_missing_files_and_fake_gzip(tmp_path):
    blank = write(tmp_path / "blank.txt", "\n  \n\n")
    with pytest.raises(UserError, match="blank.txt: has no non-blank lines"):
        read_text(blank)
    with pytest.raises(UserError, match="nothere.txt: no such file"):
        read_text(tmp_path / "nothere.txt")
    with pytest.raises(UserError, match="is a directory"):
        read_text(tmp_path)
    fake = write(tmp_path / "fake.txt.gz", "plain text\n")
    with pytest.raises(UserError, match="fake.txt.gz: named .gz but is not gzip-compressed"):
        read_text(fake)
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress(b"some text\n" * 50)[:30])
    with pytest.raises(UserError, match="broken.gz: corrupt gzip data"):
        read_text(broken)


def test_read_lines_keeps_blank_lines_and_line_numbers_honest(tmp_path):
    # \x0b and \u2028 are line breaks to str.splitlines, but not to files: line numbers stay right
    path = write(tmp_path / "hyp.txt", "\ufeffa\x0bb\n\nc\u2028d\n")
    assert read_lines(path) == ["a\x0bb", "", "c\u2028d"]
    assert read_lines(write(tmp_path / "no_newline.txt", "x\ny")) == ["x", "y"]


def test_report_without_skips():
    assert ReadReport(kept=4).summary() == "kept 4 lines, skipped none"


def test_looks_like_tsv_reads_the_first_non_blank_line(tmp_path):
    assert looks_like_tsv(write(tmp_path / "pairs.tsv.gz", "\n\nhello\tbonjour\n", compress=True))
    assert not looks_like_tsv(write(tmp_path / "text.txt", "plain text\nwith a\ttab later\n"))
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("café\tcoffee\n".encode("latin-1"))
    with pytest.raises(UserError, match="invalid UTF-8"):
        looks_like_tsv(bad)
