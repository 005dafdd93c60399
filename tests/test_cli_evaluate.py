"""`explorer evaluate` run as a user types it: rows written, summary and buckets printed, losses
equal to `explorer score`, BLEU equal to sacreBLEU, one-line errors."""

import csv
import json

import pytest
import sacrebleu

from explorer.cli import main
from explorer.data.tasks import make_task


def test_evaluate_task_writes_every_row_and_prints_buckets(reverse_checkpoint, tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert main(["evaluate", "--checkpoint", str(reverse_checkpoint), "--task", "reverse",
                 "--out", str(out), "--by-length"]) == 0
    printed = capsys.readouterr().out.splitlines()
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    val = make_task("reverse").val
    assert [(r["source"], r["reference"]) for r in rows] == val
    bleu = sacrebleu.corpus_bleu([r["output"] for r in rows], [[r["reference"] for r in rows]],
                                 tokenize="char").score
    assert printed[0].startswith(f"{len(val)} examples, BLEU {bleu:.2f}")
    counts = [int(line.split()[1]) for line in printed[2:]]
    assert sum(counts) == len(val)  # the buckets hold every example once


def test_evaluate_loss_equals_score(reverse_checkpoint, tmp_path, capsys):
    data = tmp_path / "pairs.tsv"
    data.write_text("abc\tcba\nhello\tolleh\n", encoding="utf-8")
    out = tmp_path / "rows.jsonl"
    assert main(["evaluate", "--checkpoint", str(reverse_checkpoint), "--data", str(data),
                 "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    capsys.readouterr()
    for row in rows:
        assert main(["score", "--checkpoint", str(reverse_checkpoint), "--source", row["source"],
                     "--target", row["reference"], "--json"]) == 0
        scored = json.loads(capsys.readouterr().out)
        assert row["loss"] == pytest.approx(-scored["total"], rel=1e-5)


def test_evaluate_parallel_files_and_mismatch(reverse_checkpoint, tmp_path, capsys):
    (tmp_path / "s.txt").write_text("abc\nxyz\n")
    (tmp_path / "t.txt").write_text("cba\n")
    code = main(["evaluate", "--checkpoint", str(reverse_checkpoint), "--src", str(tmp_path / "s.txt"),
                 "--tgt", str(tmp_path / "t.txt")])
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1 and "differ in length" in error
    (tmp_path / "t.txt").write_text("cba\nzyx\n")
    assert main(["evaluate", "--checkpoint", str(reverse_checkpoint), "--src", str(tmp_path / "s.txt"),
                 "--tgt", str(tmp_path / "t.txt")]) == 0
    assert capsys.readouterr().out.startswith("2 examples")


def test_evaluate_refuses_a_task_of_another_kind(reverse_checkpoint, capsys):
    assert main(["evaluate", "--checkpoint", str(reverse_checkpoint), "--task", "brackets"]) == 2
    assert "lm data" in capsys.readouterr().err
