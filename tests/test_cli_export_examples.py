"""`explorer export --plots examples,length`: the Examples table and the BLEU-by-length plot,
rendered headless from a checkpoint."""

import csv

import pytest
import sacrebleu

from explorer.cli import main

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


@pytest.fixture
def outside_the_app(qapp):
    """`explorer export` runs outside the app, so its tables restore no sort or filter a user left
    there; an earlier test in this worker may have named the application as the app does."""
    name = qapp.applicationName()
    qapp.setApplicationName("explorer-export")
    yield
    qapp.setApplicationName(name)


def test_export_examples_and_length(outside_the_app, reverse_checkpoint, tmp_path, capsys):
    from PySide6.QtGui import QImage

    from explorer.training import load_checkpoint

    out = tmp_path / "figures"
    assert main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out),
                 "--plots", "examples,length", "--format", "png,csv"]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader(open(out / "examples_rows.csv", encoding="utf-8")))
    val = load_checkpoint(reverse_checkpoint).data.val
    assert [(r["source"], r["reference"]) for r in rows] == val
    buckets = list(csv.DictReader(open(out / "length_length.csv", encoding="utf-8")))
    assert sum(int(b["examples"]) for b in buckets) == len(val)
    if len(buckets) == 1:  # one bucket: its BLEU is the corpus BLEU
        corpus = sacrebleu.corpus_bleu([r["output"] for r in rows], [[r["reference"] for r in rows]],
                                       tokenize="char").score
        assert float(buckets[0]["bleu"]) == pytest.approx(corpus)
    assert QImage(str(out / "length_length.png")).width() > 100
