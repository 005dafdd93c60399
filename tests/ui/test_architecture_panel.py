"""The architecture panel draws the traced model, unfolds a folded group on a click, asks for the
panel that shows a block, and exports PNG/SVG/CSV."""

from __future__ import annotations

from explorer.training import DataSpec, build_workspace


def test_architecture_panel_folds_unfolds_and_exports(qtbot, tmp_path):
    from explorer.ui.bus import AppBus
    from explorer.ui.panels.architecture import ArchitecturePanel, panel_for

    bus = AppBus()
    panel = ArchitecturePanel(bus)
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    workspace = build_workspace(DataSpec(task="brackets", n_train=40, n_val=8), "gpt", "tiny",
                                num_layers=3)
    bus.set_workspace(workspace)
    qtbot.waitUntil(panel.has_content, timeout=30_000)
    folded = next(b for b in panel.blocks if b.count == 3)
    before = len(panel.blocks)
    panel.toggle(folded)
    assert len(panel.blocks) == before + 2  # the group's three layers, one block each
    panel.toggle(next(b for b in panel.blocks if b.modules[0] == folded.modules[0]))
    assert len(panel.blocks) == before  # folded again
    assert panel_for(folded) == "attention"  # its outputs include the (B, H, T, T) pattern
    embedding = next(b for b in panel.blocks if b.kind == "Embedding")
    assert panel_for(embedding) == "embeddings"
    # what a double click on a block does: ask the window for the panel that shows it
    with qtbot.waitSignal(bus.show_panel, timeout=5000) as shown:
        panel.open_panel_of(embedding)
    assert shown.args == ["embeddings"]
    written = panel.export(tmp_path)
    assert {p.suffix for p in written} == {".png", ".svg", ".csv"}
    panel.shutdown()
