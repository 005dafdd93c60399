"""The Ablation panel on recurrent models: hidden units typed for a layer (or taken from the Hidden
panel's selection) are ablated at every step, against torch's own GRU cell with a hand-written
forward hook; Undo gives the clean logits back bit for bit; a bad unit list is one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.interventions import format_units, parse_units
from explorer.errors import UserError
from explorer.ui.panels.ablation import NO_MODEL, AblationPanel
from tests.ui.test_inside_panels import char_workspace, open_panel

UNITS = [3, 7, 10, 11, 12]


def _apply(qtbot, panel, point: str, text: str) -> None:
    panel.point_box.setCurrentIndex(panel.point_box.findData(point))
    panel.units_edit.setText(text)
    panel.apply_button.click()
    qtbot.waitUntil(lambda: not panel.busy() and panel.effect is not None
                    and (panel.effect.ablated != panel.effect.clean).any() == bool(panel.units),
                    timeout=30_000)


def _hooked_gru_log_probs(workspace, source: str, units: list[int]) -> np.ndarray:
    """An independent reference: torch.nn.GRUCell with the LM's weights, run step by step, a
    forward hook zeroing `units` of each new state (so the recurrence goes on with them zeroed)."""
    model = workspace.model.eval()
    rnn = model.rnn
    cell = torch.nn.GRUCell(rnn.input_size, rnn.hidden_size)
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(rnn, f"{name}_l0"))

    def zero_units(_module, _inputs, output):
        output = output.clone()
        output[:, units] = 0.0
        return output

    cell.register_forward_hook(zero_units)
    item = attribution_input(workspace, source, "")
    tokens = item.inputs[0]  # (1, T)
    h = torch.zeros(1, rnn.hidden_size)
    states = []
    with torch.no_grad():
        for x in model.embedding(tokens)[0]:
            h = cell(x[None], h)
            states.append(h)
        log_probs = model.head(torch.cat(states)).log_softmax(-1)  # (T, V)
    return np.array([float(log_probs[row.position, row.token_id]) for row in item.rows])


@pytest.fixture(scope="module")
def gru_lm():
    return char_workspace("rnn-lm", "reverse", cell="gru", num_layers=1)


def test_units_typed_in_the_panel_equal_a_forward_hook_and_undo_is_bit_identical(qtbot, gru_lm):
    panel = open_panel(qtbot, AblationPanel, gru_lm)
    assert not panel.metric_box.isVisibleTo(panel) and panel.units_edit.isVisibleTo(panel)
    point = "lm.rnn.l0.fwd.hook_h"
    assert panel.point_box.findData(point) >= 0 and panel.point_box.currentText() == "lm layer 1 forward"
    clean = panel.effect.clean.copy()
    np.testing.assert_array_equal(panel.effect.ablated, clean)  # nothing ablated yet
    source, _ = panel.probe_text
    np.testing.assert_allclose(clean, _hooked_gru_log_probs(gru_lm, source, []), atol=1e-5)

    _apply(qtbot, panel, point, "3, 7, 10-12")
    assert panel.units == {point: UNITS}
    np.testing.assert_allclose(panel.effect.ablated, _hooked_gru_log_probs(gru_lm, source, UNITS), atol=1e-5)
    assert "ablated lm layer 1 forward units 3, 7, 10-12 (zero)" in panel.status.text()
    assert {"units"} <= set(panel.plot_items()) and "ablated" in panel.tables()

    panel.undo_button.click()
    qtbot.waitUntil(lambda: not panel.busy() and not panel.units
                    and np.array_equal(panel.effect.ablated, panel.effect.clean), timeout=30_000)
    np.testing.assert_array_equal(panel.effect.clean, clean)  # bit-identical: the model untouched
    assert panel.units_edit.text() == ""


@pytest.mark.parametrize("text, message", [("3,x", "'x' is not a unit"),
                                           ("3, 64", "unit 64 is out of range"),
                                           ("5-2", "runs backwards")])
def test_a_bad_unit_list_is_one_line_and_keeps_the_state(qtbot, gru_lm, text, message):
    panel = open_panel(qtbot, AblationPanel, gru_lm)
    point = panel.point_box.itemData(0)
    _apply(qtbot, panel, point, "1-2")
    before = panel.effect
    panel.units_edit.setText(text)
    panel.apply_button.click()
    assert message in panel.status.text() and "\n" not in panel.status.text()
    assert panel.units == {point: [1, 2]} and panel.effect is before and not panel.busy()


def test_parse_and_format_units_are_inverse():
    assert parse_units("3, 7, 10-12", 13) == UNITS and format_units(UNITS) == "3, 7, 10-12"
    assert parse_units(" ", 4) == [] and parse_units("2,2,1-2", 4) == [1, 2]
    with pytest.raises(UserError, match="out of range"):
        parse_units("4", 4)


def test_seq2seq_units_from_the_hidden_selection_in_mean_mode(qtbot):
    from explorer.analysis.ablation_means import validation_means
    from explorer.analysis.interventions import ablation_effect

    workspace = char_workspace("seq2seq", "reverse", cell="gru", attention="dot")
    panel = open_panel(qtbot, AblationPanel, workspace)
    assert NO_MODEL.startswith("Open ") and "Transformer" in NO_MODEL and "RNN" in NO_MODEL
    points = [panel.point_box.itemData(i) for i in range(panel.point_box.count())]
    assert points == ["encoder.rnn.l0.fwd.hook_h", "encoder.rnn.l0.bwd.hook_h", "decoder.rnn.l0.fwd.hook_h"]
    assert not panel.from_hidden_button.isEnabled()
    panel.mode_box.setCurrentIndex(panel.mode_box.findData("mean"))
    panel.bus.units_selected.emit(("encoder.rnn.l0.bwd.hook_h", [0, 1, 2, 5]))  # as the Hidden panel does
    panel.from_hidden_button.click()
    qtbot.waitUntil(lambda: not panel.busy() and panel.units and (panel.effect.ablated != panel.effect.clean).any(),
                    timeout=30_000)
    assert panel.point_box.currentText() == "encoder layer 1 backward" and panel.units_edit.text() == "0-2, 5"
    source, target = panel.probe_text
    expected = ablation_effect(workspace, source, target, units={"encoder.rnn.l0.bwd.hook_h": [0, 1, 2, 5]},
                               mode="mean", means=validation_means(workspace))
    np.testing.assert_allclose(panel.effect.ablated, expected.ablated, atol=1e-6)
    assert "attention moved up to" in panel.status.text()  # its cross-attention moved with the encoder
