"""`explorer export --plots hidden,gates,embeddings` on a 2-layer LSTM LM: the CSV holds the model's
own h_t, one row per layer and unit, one column per input token."""

import csv

import numpy as np
import pytest

from explorer.cli import main

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def test_export_hidden_gates_embeddings(qapp, tmp_path, capsys):
    import torch

    from explorer.analysis.hidden import hidden_snapshot
    from explorer.training import DataSpec, build_workspace, load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="brackets", n_train=32, n_val=8), "rnn-lm", seed=0,
                                cell="lstm", num_layers=2, embed_dim=8, hidden_size=6)
    checkpoint = save_checkpoint(workspace, tmp_path / "ckpt", optimizer=False)
    out = tmp_path / "figures"
    code = main(["export", "--checkpoint", str(checkpoint), "--out", str(out), "--input", "the (cat) sat",
                 "--plots", "hidden,gates,embeddings", "--format", "png,svg,csv"])
    assert code == 0
    printed = set(capsys.readouterr().out.split())
    for name in ("hidden_heatmap.png", "hidden_heatmap.svg", "hidden_h.csv", "hidden_c.csv",
                 "gates_heatmap.png", "gates_i.csv", "gates_o.csv", "embeddings_projection.png",
                 "embeddings_projection.csv"):
        assert str(out / name) in printed

    layers = hidden_snapshot(load_checkpoint(checkpoint), "the (cat) sat").layers
    with open(out / "hidden_h.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["unit", *layers[0].tokens]
    assert [r[0] for r in rows[1:]] == [f"l{k}:{u}" for k in (0, 1) for u in range(6)]
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float32)
    np.testing.assert_array_equal(values, np.concatenate([layer.hidden for layer in layers]))
