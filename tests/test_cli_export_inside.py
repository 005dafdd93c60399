"""`explorer export --plots hidden,gates,embeddings` on a 2-layer LSTM LM: the CSV holds the model's
own h_t, one row per layer and unit, one column per input token (the last one's too)."""

import csv
import threading

import numpy as np
import pytest

from explorer.cli import main

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def test_export_hidden_gates_embeddings(qapp, tmp_path, capsys, monkeypatch):
    import torch

    import explorer.analysis.probe as probe_module

    # a probe as slow as on a loaded machine: every panel that shows it must wait for it (the
    # hidden panel was exported before it arrived, and skipped, when it came first in --plots),
    # the attention maps of its first stage being no answer for the hidden panel
    quick_stages = probe_module.probe_stages  # what the Prober runs

    def slow_stages(*args, **kwargs):
        stages = quick_stages(*args, **kwargs)
        yield next(stages)
        threading.Event().wait(1.0)
        return (yield from stages)

    monkeypatch.setattr(probe_module, "probe_stages", slow_stages)

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
    # no units selected headless: no figure of empty traces that says "drag across the tokens"
    assert not (out / "hidden_traces.png").exists()

    layers = hidden_snapshot(load_checkpoint(checkpoint), "the (cat) sat").layers
    with open(out / "hidden_h.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["unit", *layers[0].tokens]
    assert [r[0] for r in rows[1:]] == [f"l{k}:{u}" for k in (1, 2) for u in range(6)]
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]], dtype=np.float32)
    np.testing.assert_array_equal(values, np.concatenate([layer.hidden for layer in layers]))
    # one column per token typed, equal to the model's own trace on all of them
    model = load_checkpoint(checkpoint).model.eval()
    ids = workspace.tokenizer.encode("the (cat) sat")
    assert len(rows[0]) == 1 + len(ids)
    with torch.no_grad():
        trace = model(torch.tensor([ids]), trace=True)[-1]
    by_layer = [torch.cat(trace.hidden[f"lm.l{k}"]).T.numpy() for k in (0, 1)]  # (H, T) each
    np.testing.assert_allclose(values, np.concatenate(by_layer), atol=1e-6)
