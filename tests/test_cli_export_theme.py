"""`explorer export`: one theme for every plot (light by default, `--theme dark`), and a seq2seq
probe without `--target` that uses the model's own greedy output."""

import csv

import pytest

from explorer.cli import main

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def _corner_lightness(path) -> int:
    from PySide6.QtGui import QColor, QImage

    image = QImage(str(path))
    return QColor(image.pixel(1, 1)).lightness()


@pytest.mark.parametrize("theme, light", [(None, True), ("light", True), ("dark", False)])
def test_every_exported_plot_has_the_themes_background(qapp, reverse_checkpoint, tmp_path, theme, light):
    out = tmp_path / "figures"
    args = ["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out), "--input", "abcd",
            "--target", "dcba", "--plots", "attention,gradients,beam", "--format", "png"]
    assert main(args + (["--theme", theme] if theme else [])) == 0
    pngs = sorted(out.glob("*.png"))
    assert {"attention_heatmap.png", "gradients_depth.png", "beam_tree.png"} <= {p.name for p in pngs}
    for png in pngs:
        lightness = _corner_lightness(png)
        assert (lightness > 230) if light else (lightness < 40), (png.name, lightness)


def test_a_seq2seq_probe_without_target_uses_the_greedy_output(qapp, reverse_checkpoint, tmp_path, capsys):
    from explorer.analysis.probe import probe
    from explorer.decoding import greedy
    from explorer.decoding.scoring import encode_context
    from explorer.training import load_checkpoint

    workspace = load_checkpoint(reverse_checkpoint)
    output = greedy(workspace.model, encode_context(workspace, "abcd"), max_len=64,
                    tokenizer=workspace.tokenizer).text
    out = tmp_path / "figures"
    assert main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out), "--input", "abcd",
                 "--plots", "attention", "--format", "csv"]) == 0
    assert "greedy output" in capsys.readouterr().err
    with open(out / "attention_heatmap.csv", newline="", encoding="utf-8") as handle:
        rows = [row[0] for row in list(csv.reader(handle))[1:]]
    (cross,) = [m for m in probe(workspace, "abcd", output).attention if m.kind == "cross"]
    assert rows == cross.rows and len(rows) == len(workspace.tokenizer.encode(output)) + 1
