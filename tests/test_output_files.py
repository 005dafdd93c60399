"""Output files are written by replacing their name in the output folder: a symlink planted at
the name is replaced, never followed, so nothing outside the folder is written; `export --out`
naming a file is one line, exit 2; files replaced are counted in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.cli import main
from explorer.durable import replace_file


def planted_link(folder: Path, name: str) -> Path:
    """folder/name, a symlink to a precious file outside `folder`; -> the precious file."""
    precious = folder.parent / "precious" / "p.txt"
    precious.parent.mkdir(parents=True, exist_ok=True)
    precious.write_text("precious\n")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).symlink_to(Path("..") / "precious" / "p.txt")
    return precious


def test_replace_file_replaces_a_link_and_leaves_what_was_there_on_failure(tmp_path):
    precious = planted_link(tmp_path / "out", "table.csv")
    target = tmp_path / "out" / "table.csv"
    replace_file(target, lambda temporary: temporary.write_text("new\n"))
    assert precious.read_text() == "precious\n"
    assert not target.is_symlink() and target.read_text() == "new\n"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600

    def fails(temporary: Path) -> None:
        temporary.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        replace_file(target, fails)
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["table.csv"]  # no debris


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def test_export_csv_through_a_planted_link_writes_nothing_outside_and_says_what_it_replaced(
        tmp_path, reverse_checkpoint, capsys):
    out = tmp_path / "o" / "exp"
    precious = planted_link(out, "attention_all_maps.csv")
    argv = ["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out), "--plots",
            "attention", "--format", "csv", "--input", "abc", "--target", "cba"]
    assert run_main(argv) == 0
    assert precious.read_text() == "precious\n"
    written = out / "attention_all_maps.csv"
    assert not written.is_symlink() and written.read_text().count("\n") > 1
    err = capsys.readouterr().err.splitlines()
    assert f"explorer export: replaced 1 existing file in {out}" in err
    assert run_main(argv) == 0  # again: every file it writes is there already
    err = capsys.readouterr().err.splitlines()
    assert f"explorer export: replaced {len(list(out.iterdir()))} existing files in {out}" in err


def test_export_png_through_a_planted_link_writes_nothing_outside(tmp_path, reverse_checkpoint):
    out = tmp_path / "o" / "exp"
    precious = planted_link(out, "attention_heatmap.png")
    result = subprocess.run(
        [sys.executable, "-m", "explorer", "export", "--checkpoint", str(reverse_checkpoint),
         "--out", str(out), "--plots", "attention", "--format", "png,svg", "--input", "abc",
         "--target", "cba"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    assert precious.read_text() == "precious\n"
    png = out / "attention_heatmap.png"
    assert not png.is_symlink() and png.read_bytes().startswith(b"\x89PNG")
    assert (out / "attention_heatmap.svg").read_text().lstrip().startswith("<?xml")
    assert f"explorer export: replaced 1 existing file in {out}" in result.stderr.splitlines()


@pytest.mark.parametrize("formats", ["csv", "png"])
def test_export_out_naming_a_file_is_one_line(tmp_path, reverse_checkpoint, capsys, formats):
    existing = tmp_path / "notes.txt"
    existing.write_text("mine\n")
    code = run_main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(existing),
                     "--plots", "attention", "--format", formats])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == (f"explorer export: error: --out {existing}: is a file; give a folder for the "
                   "files\n")
    assert existing.read_text() == "mine\n"


def test_evaluate_out_through_a_planted_link_replaces_the_link_and_says_so(
        tmp_path, reverse_checkpoint, capsys):
    out = tmp_path / "o"
    precious = planted_link(out, "rows.csv")
    code = run_main(["evaluate", "--checkpoint", str(reverse_checkpoint), "--task", "reverse",
                     "--out", str(out / "rows.csv")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert precious.read_text() == "precious\n"
    rows = (out / "rows.csv").read_text().splitlines()
    assert rows[0].startswith("source,") and len(rows) > 1
    assert f"to {out / 'rows.csv'} (replaced 1 existing file)" in err


def test_json_tables_and_handouts_replace_a_planted_link(tmp_path):
    from explorer.export.tables import write_json
    from explorer.lessons.format import read_lesson, builtin_lessons
    from explorer.lessons.handout import write_handout

    out = tmp_path / "o"
    precious = planted_link(out, "doc.json")
    write_json(out / "doc.json", {"a": [1, 2]})
    assert precious.read_text() == "precious\n" and (out / "doc.json").read_text().startswith("{")
    (out / "handout.md").symlink_to(precious)
    write_handout(read_lesson(builtin_lessons()[0]), out, figures={})
    assert precious.read_text() == "precious\n"
    assert (out / "handout.md").read_text().startswith("# ")


def test_a_run_never_appends_its_rows_through_a_planted_link(tmp_path, capsys):
    run = tmp_path / "o" / "run"
    fast = ["--eval-every", "0", "--threads", "1", "--device", "cpu", "--batch-size", "4"]
    assert run_main(["train", "--task", "reverse", "--arch", "seq2seq", "--preset", "tiny",
                     "--steps", "2", "--out", str(run), *fast]) == 0
    (run / "metrics.jsonl").unlink()
    precious = planted_link(run, "metrics.jsonl")
    capsys.readouterr()
    code = run_main(["train", "--resume", str(run), "--steps", "3", *fast])
    err = capsys.readouterr().err
    assert precious.read_text() == "precious\n"
    assert code == 2 and err.splitlines()[-1] == (
        f"explorer train: error: {run / 'metrics.jsonl'}: is a symbolic link; rows are appended "
        "to a file of the folder's own, never through a link")
