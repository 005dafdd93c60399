"""The embedding-norms panel, a live panel in two files: its bars against the embedding rows read
by hand, its data computed by the probes only while it is in sight, and live while training."""

import numpy as np
import pytest
import torch

from explorer.analysis import probe as probe_module
from explorer.ui.bus import AppBus
from explorer.ui.panels.embedding_norms import EmbeddingNormsPanel
from explorer.ui.probing import Prober

from test_attention_panel import char_workspace


def make_panel(qtbot):
    bus = AppBus()
    panel = EmbeddingNormsPanel(bus)
    prober = Prober(bus, panel)  # the controller's part: it probes, the panel draws
    qtbot.addWidget(panel)
    panel.resize(800, 500)
    panel.show()
    return bus, prober, panel


@pytest.mark.parametrize("family, table, source_side", [
    ("gpt", lambda m: m.embed.token.weight, False),
    ("seq2seq", lambda m: m.src_embedding.weight, True),
])
def test_bars_are_the_norms_of_the_probe_tokens_embedding_rows(qtbot, family, table, source_side):
    bus, _, panel = make_panel(qtbot)
    workspace = char_workspace(family)
    bus.set_workspace(workspace)
    qtbot.waitUntil(panel.has_content, timeout=15_000)
    source, target = bus.probe_text
    ids = workspace.tokenizer.encode(source) + ([2] if source_side else [])  # a source ends in <eos>
    expected = table(workspace.model).detach()[torch.tensor(ids)].norm(dim=-1).numpy()
    np.testing.assert_allclose(panel.chart.values, expected, rtol=1e-6)
    header, rows = panel.tables()["norms"]
    assert header[-1] == ("source_norm" if source_side else "input_norm")
    assert [row[1] for row in rows] == [str(t) for t in workspace.tokenizer.tokens(ids)]


def test_the_probes_compute_it_only_while_the_panel_is_in_sight_and_live_while_training(qtbot):
    bus, prober, panel = make_panel(qtbot)
    workspace = char_workspace("gpt")
    bus.set_workspace(workspace)
    qtbot.waitUntil(panel.has_content, timeout=15_000)
    probe_fn = probe_module.make_probe_fn(workspace, prober.input)  # what Controller.train uses
    weight = workspace.model.embed.token.weight
    with torch.no_grad():
        weight.mul_(3.0)  # a training step moving the embeddings
    snapshot = probe_fn(workspace.model, 7)
    bus.probe.emit(snapshot)
    ids = torch.tensor(workspace.tokenizer.encode(bus.probe_text[0]))
    np.testing.assert_allclose(panel.chart.values, weight.detach()[ids].norm(dim=-1).numpy(), rtol=1e-6)
    assert panel.data["step"] == 7
    panel.hide()  # out of sight: the probes leave it out
    assert "embedding_norms" not in prober.input.live
    assert "embedding_norms" not in probe_fn(workspace.model, 8).live
    panel.show()
    assert "embedding_norms" in probe_fn(workspace.model, 9).live
