"""`explorer export`: headless panels from a checkpoint to PNG/SVG/CSV, opened and checked."""

import csv
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from explorer.cli import main

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_export_attention_positional_gradients(qapp, reverse_checkpoint, tmp_path, capsys):
    from PySide6.QtGui import QImage

    from explorer.analysis.positional import sinusoidal
    from explorer.analysis.probe import probe
    from explorer.training import load_checkpoint

    out = tmp_path / "figures"
    code = main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out), "--input", "abcd",
                 "--target", "dcba", "--plots", "attention,positional,gradients",
                 "--format", "png,svg,csv", "--width", "800", "--dpi", "150"])
    assert code == 0
    printed = capsys.readouterr().out.split()
    for name in ("attention_heatmap", "positional_matrix", "gradients_depth"):
        for ext in ("png", "svg"):
            assert str(out / f"{name}.{ext}") in printed
    image = QImage(str(out / "attention_heatmap.png"))
    assert image.width() == 800 and image.height() > 100
    assert round(image.dotsPerMeterX() * 0.0254) == 150
    colours = {image.pixel(x, y) for x in range(0, 800, 7) for y in range(0, image.height(), 7)}
    assert len(colours) > 20  # a drawn heatmap with labels, not a blank canvas
    for svg in out.glob("*.svg"):
        assert ElementTree.parse(svg).getroot().tag.endswith("svg")

    # the CSV holds the numbers shown: the probe's attention, and the sinusoidal table
    workspace = load_checkpoint(reverse_checkpoint)
    snapshot = probe(workspace, "abcd", "dcba")
    shown = read_csv(out / "attention_heatmap.csv")
    # the panel opens on cross-attention (the alignment), the first layer, mean of heads
    (first,) = [m for m in snapshot.attention if m.kind == "cross" and m.layer == 0]
    assert shown[0][1:] == first.cols and [row[0] for row in shown[1:]] == first.rows
    assert first.rows == ["d", "c", "b", "a", "<eos>"]  # target over source
    np.testing.assert_allclose(np.array([row[1:] for row in shown[1:]], float),
                               first.weights.mean(axis=0), atol=1e-6)
    table = read_csv(out / "positional_matrix.csv")
    values = np.array([row[1:] for row in table[1:]], float)
    np.testing.assert_allclose(values, sinusoidal(len(values), 16), atol=1e-6)
    # a Transformer's own table and its M_k fit, headless (no panel): the same files
    assert main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(tmp_path / "csv"),
                 "--plots", "positional", "--format", "csv"]) == 0
    headless = sorted((tmp_path / "csv").iterdir())
    assert {"positional_model.csv", "positional_shift_map.csv"} <= {path.name for path in headless}
    for path in headless:
        assert path.read_text() == (out / path.name).read_text(), path.name


def test_export_rejects_bad_requests(reverse_checkpoint, tmp_path, capsys):
    assert main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(tmp_path), "--plots", "pie"]) == 2
    assert "unknown plot(s) pie" in capsys.readouterr().err
    assert main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(tmp_path), "--format", "gif"]) == 2
    assert main(["export", "--checkpoint", str(tmp_path / "none"), "--out", str(tmp_path)]) == 2
    assert "no such checkpoint" in capsys.readouterr().err


def test_a_model_without_attention_has_no_attention_plot(qapp, tmp_path, capsys):
    from explorer.training import DataSpec, build_workspace, save_checkpoint

    workspace = build_workspace(DataSpec(task="brackets", n_train=16, n_val=4), "rnn-lm", seed=0,
                                embed_dim=8, hidden_size=8)
    checkpoint = save_checkpoint(workspace, tmp_path / "lm", optimizer=False)
    args = ["export", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "out"), "--format", "csv"]
    assert main([*args, "--plots", "attention"]) == 2
    assert "nothing to export" in capsys.readouterr().err
    assert main([*args, "--plots", "attention,gradients"]) == 0  # skipped with a note, the rest written
    captured = capsys.readouterr()
    assert "attention: nothing to draw" in captured.err
    assert str(tmp_path / "out" / "gradients_through_time.csv") in captured.out.split()


# the panels whose registry entry computes their tables without Qt (explorer/export/headless.py)
HEADLESS_CSV = ("curves", "bleu", "attention", "positional", "gradients", "hidden", "gates",
                "embeddings", "beam", "attribution", "rollout", "compare",
                "architecture", "runs")
# exported from the tiny Transformer, not the GRU demo: rollout needs self-attention layers, and
# integrated gradients' 50 steps a row are cheap on its 3-token probe
TRANSFORMER_ONLY = ("attribution", "rollout")


def test_csv_without_qt_builds_no_widget_and_matches_the_panels_own(qapp, reverse_checkpoint, tmp_path,
                                                                   capsys):
    """Every panel whose registry entry computes its tables without Qt exports CSV headless with
    no QWidget (PySide6 is never imported), the same files, byte for byte, that its panel writes."""
    import subprocess
    import sys
    from pathlib import Path

    from explorer.panel_registry import EXPORT_ONLY_PANELS, PANELS

    assert {entry.panel_id for entry in PANELS + EXPORT_ONLY_PANELS if entry.tables} == set(HEADLESS_CSV)
    demo = Path(__file__).resolve().parents[1] / "resources" / "demo" / "dates-gru-additive"
    exports = {  # folder name -> the export's arguments
        "gru": ["--checkpoint", str(demo), "--plots",
                ",".join(p for p in HEADLESS_CSV if p not in TRANSFORMER_ONLY)],
        "transformer": ["--checkpoint", str(reverse_checkpoint), "--plots",
                        ",".join((*TRANSFORMER_ONLY, "positional")),  # its own table too
                        "--input", "abc", "--target", "cba"],
    }
    code = ("import sys; from explorer.cli import main; "
            f"codes = [main(['export', *args, '--format', 'csv', '--out', {str(tmp_path)!r} + '/headless-' + name]) "
            f"for name, args in {exports!r}.items()]; "
            "print(*codes, any(m.startswith('PySide6') for m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.stdout.split()[-3:] == ["0", "0", "False"], run.stderr
    drawn_panels = set()
    for name, args in exports.items():
        headless, drawn = tmp_path / f"headless-{name}", tmp_path / f"drawn-{name}"
        # the panels' own export (any format beside csv builds the panels)
        assert main(["export", *args, "--format", "csv,svg", "--out", str(drawn)]) == 0
        capsys.readouterr()
        tables = sorted(path.name for path in drawn.iterdir() if path.suffix in (".csv", ".json"))
        assert sorted(path.name for path in headless.iterdir()) == tables  # beam_tree.json too
        for table in tables:
            assert (headless / table).read_text() == (drawn / table).read_text(), table
        drawn_panels |= {table.split("_")[0] for table in tables}
    assert drawn_panels == set(HEADLESS_CSV)  # every panel drew
    headless = tmp_path / "headless-gru"
    # and they are what each plot means: attention rows are distributions, r is a sigmoid gate,
    # the playground is a_h^k at its first a_h = 1.1
    heatmap = np.array([row[1:] for row in read_csv(headless / "attention_heatmap.csv")[1:]], float)
    np.testing.assert_allclose(heatmap.sum(axis=1), 1.0, atol=1e-5)
    gate = np.array([row[1:] for row in read_csv(headless / "gates_r_encoder.csv")[1:]], float)
    assert gate.size and ((gate > 0) & (gate < 1)).all()
    playground = np.array([row[1] for row in read_csv(headless / "gradients_playground.csv")[1:]], float)
    np.testing.assert_allclose(playground, 1.1 ** np.arange(len(playground)), rtol=1e-9)
    rows = read_csv(headless / "curves_train.csv")
    assert rows[0] == ["step", "loss", "perplexity", "lr", "grad_norm", "grad_norm_clipped"]
    assert len(rows) > 100 and float(rows[1][2]) == pytest.approx(np.exp(float(rows[1][1])))
    # Compare runs shows the open model's own run: its loss is the curves panel's
    runs = read_csv(headless / "runs_loss.csv")
    assert runs[0] == ["step", "this window"]
    np.testing.assert_array_equal(np.array(runs[1:], float), np.array([row[:2] for row in rows[1:]], float))
    # rollout's rows are shares (each sums to 1); IG's completeness gap is Σ attributions − (f(x) −
    # f(baseline)) of each output token
    transformer = tmp_path / "headless-transformer"
    rollout = np.array([row[1:] for row in read_csv(transformer / "rollout_decoder_to_source.csv")[1:]], float)
    np.testing.assert_allclose(rollout.sum(axis=1), 1.0, atol=1e-5)
    attributions = np.array([row[1:] for row in read_csv(transformer / "attribution_map.csv")[1:]], float)
    f_x, f_baseline, gap = np.array([row[1:4] for row in read_csv(transformer / "attribution_completeness.csv")[1:]],
                                    float).T
    assert len(gap) == 4  # c, b, a, <eos>
    # (a row's later prefix tokens are NaN: not inputs of that output token)
    np.testing.assert_allclose(np.nansum(attributions, axis=1) - (f_x - f_baseline), gap, atol=1e-6)
