"""Top examples from the hidden-state and attention panels, listed in the Examples panel: the
query names the unit or head shown, the list equals the core's search over the table's rows,
and a click selects that row (showing every row first when a filter hides it) and probes it."""

import numpy as np
import pytest

from explorer.analysis.top_examples import top_examples
from explorer.ui.bus import AppBus
from explorer.ui.probing import Prober


@pytest.fixture
def panels(qtbot, tiny_workspace):
    from explorer.ui.panels.attention import AttentionPanel
    from explorer.ui.panels.examples import ExamplesPanel
    from explorer.ui.panels.hidden import HiddenPanel

    bus = AppBus()
    examples, hidden, attention = ExamplesPanel(bus), HiddenPanel(bus), AttentionPanel(bus)
    for panel in (examples, hidden, attention):
        qtbot.addWidget(panel)
    Prober(bus, examples)
    with qtbot.waitSignal(examples.evaluated, timeout=60_000):
        bus.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: hidden.has_content() and attention.has_content() and not bus.probing,
                    timeout=60_000)
    yield bus, examples, hidden, attention
    for panel in (examples, hidden, attention):
        panel.shutdown()


def _search(qtbot, examples, button):
    shown = []
    examples.bus.show_panel.connect(shown.append)
    with qtbot.waitSignal(examples.top_examples.found_ready, timeout=60_000):
        button.click()
    assert shown == ["examples"]
    assert examples.tabs.currentWidget() is examples.top_examples
    return examples.top_examples.found


def _table_pairs(examples):
    columns = examples.model.table.columns
    return [(str(s), str(r)) for s, r in zip(columns["source"], columns["reference"])]


def test_a_unit_of_the_hidden_panel(qtbot, panels, tiny_workspace):
    bus, examples, hidden, _ = panels
    hidden.layer_box.setCurrentIndex(hidden.layer_box.findData("encoder.l0"))
    hidden.unit_box.setValue(3)
    found = _search(qtbot, examples, hidden.top_button)
    assert found.point == "encoder.rnn.l0.fwd.hook_h" and found.query.index == 3
    expected = top_examples(tiny_workspace, _table_pairs(examples), found.query)
    assert list(found.rows) == list(expected.rows)
    np.testing.assert_allclose(found.activity, expected.activity)
    assert examples.top_examples.table.rowCount() == len(found.rows)
    assert "|value|" in examples.top_examples.status.text()

    # a click selects the row in the table and makes it the probe, even when filtered out
    target = int(found.rows[1])
    source = examples.model.table.columns["source"][target]
    examples.pattern_boxes["source"].setText("^no such source$")
    examples.apply_filter()
    assert examples.model.rowCount() == 0
    with qtbot.waitSignal(bus.probe_requested) as probe:
        examples.top_examples.table.cellClicked.emit(1, 0)
    assert probe.args[0] == source
    assert examples.model.table_row(examples.view.currentIndex().row()) == target
    assert examples.model.rowCount() == len(examples.model.table)


def test_a_head_of_the_attention_panel(qtbot, panels, tiny_workspace):
    _, examples, _, attention = panels
    assert attention.kind_box.currentData() == "cross"
    found = _search(qtbot, examples, attention.top_button)
    assert found.point == "decoder.cross_attn.hook_pattern" and found.query.index == 0
    expected = top_examples(tiny_workspace, _table_pairs(examples), found.query)
    assert list(found.rows) == list(expected.rows) and found.keys == expected.keys
    assert "first" in attention.top_button.toolTip()
    written = examples.tables()["top_examples"]
    assert [row[1] for row in written[1]] == list(found.rows)
