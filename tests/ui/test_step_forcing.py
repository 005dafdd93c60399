"""What if, in the step panel: force a top-k token or a typed one; the step is marked and the
forced hypothesis's log p is shown beside the model's own greedy output's."""

import pytest
from PySide6.QtCore import Qt

from explorer.decoding import score_ids
from explorer.ui.bus import AppBus
from explorer.ui.panels.step_decoding import StepDecodingPanel
from tests.ui.test_step_panel import SOURCE, tiny_workspace


@pytest.fixture
def panel(qtbot):
    panel = StepDecodingPanel(AppBus())
    qtbot.addWidget(panel)
    panel.bus.set_workspace(tiny_workspace())
    panel.set_source(SOURCE)
    yield panel
    panel.shutdown()


def test_forcing_the_runner_up_marks_the_step_and_shows_both_scores(panel, qtbot):
    decoder = panel.decoder
    runner_up = decoder.topk.token_ids[1]
    assert panel.force_box.currentData() == runner_up  # offered first: the runner-up
    qtbot.keyClick(panel, Qt.Key_F)
    assert decoder.output.token_ids[0] == runner_up and decoder.forced == {0}
    while panel.step():
        pass
    text = panel.output_label.text()
    assert "⚑" in text and "the model's own greedy output" in text
    output = decoder.output
    assert f"log p = {output.score:.3f}" in text
    assert f"log p = {decoder.own_output.score:.3f}" in text
    teacher = score_ids(panel.workspace.model, decoder.context, output.token_ids)
    assert output.score == pytest.approx(teacher.total, abs=1e-5)


def test_a_typed_token_and_a_bad_one(panel):
    topk = panel.decoder.topk
    word = next(t for t in topk.tokens[1:] if not t.startswith("<"))  # a word, not <eos>
    panel.force_box.setEditText(word)
    assert panel.force()
    assert panel.decoder.output.tokens[0] == word
    panel.force_box.setEditText("NOT A SINGLE TOKEN")
    assert not panel.force()
    assert "tokens" in panel.output_label.text() and panel.decoder.steps_taken == 1
