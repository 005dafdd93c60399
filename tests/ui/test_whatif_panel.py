"""The What if panel on a real bus: it follows the probe until pinned, compares an edit in its
runner, keeps the original on bad input, exports, and an Examples row pins through the bus."""

import pytest

from explorer.analysis.whatif import whatif_side
from explorer.ui.bus import AppBus


@pytest.fixture
def panel(qtbot, tiny_workspace):
    from explorer.ui.panels.whatif import WhatIfPanel

    bus = AppBus()
    panel = WhatIfPanel(bus)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.computed, timeout=60_000):
        bus.set_workspace(tiny_workspace)
        bus.state.set_probe_input(tiny_workspace.data.val[0][0], "")
    yield panel
    panel.shutdown()


def test_pin_edit_unpin(qtbot, panel, tiny_workspace, tmp_path):
    source = tiny_workspace.data.val[0][0]
    assert not panel.pinned and panel.original.source == source  # follows the probe
    with qtbot.waitSignal(panel.computed, timeout=60_000):
        panel.pin_probe()
    assert panel.pinned and panel.edit_box.isEnabled() and panel.edit_box.text() == source
    expected = whatif_side(tiny_workspace, source)
    assert panel.original.output_tokens == expected.output_tokens
    assert panel.original.logprob == pytest.approx(expected.logprob)

    panel.edit_box.setText(source[:-1])
    with qtbot.waitSignal(panel.computed, timeout=60_000):
        panel.edit_box.returnPressed.emit()
    result = panel.result
    assert result.edited.source == source[:-1] and result.original is panel.original
    assert result.edited.logprob == pytest.approx(whatif_side(tiny_workspace, source[:-1]).logprob)
    marked = panel.sides["edited"].output.text().count("<b style")
    assert marked == int(result.diff.edited.sum())  # the changed tokens, and only they, coloured

    written = panel.export(tmp_path)
    names = {p.name for p in written}
    assert "whatif_outputs.csv" in names and "whatif_edited_attribution.png" in names
    assert "whatif_original_attention.svg" in names

    # bad input: one line, and the pinned original (and the last comparison) stay
    original = panel.original
    for edit in ("", "x" * 10_000):
        panel.edit_box.setText(edit)
        with qtbot.waitSignal(panel.runner.failed, timeout=60_000):
            panel.compare()
        assert "\n" not in panel.message and panel.message
        assert panel.original is original and panel.pinned and panel.result is result

    with qtbot.waitSignal(panel.computed, timeout=60_000):
        panel.unpin()
    assert not panel.pinned and not panel.edit_box.isEnabled() and panel.result is None
    assert panel.original.source == source


def test_an_examples_row_pins_through_the_bus(qtbot, panel, tiny_workspace):
    source = tiny_workspace.data.val[3][0]
    with qtbot.waitSignal(panel.computed, timeout=60_000):
        panel.bus.whatif_requested.emit(source)
    assert panel.pinned and panel.original.source == source
