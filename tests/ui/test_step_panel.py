"""Step-through decoding: forward and back, keyboard, play, sampling replay, and what is shown."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PySide6.QtCore import Qt

from explorer.analysis.token_pick import pick_token
from explorer.data.tokenizers import WordTokenizer
from explorer.decoding import encode_context, greedy, sample
from explorer.ui.bus import AppBus
from explorer.ui.panels.step_decoding import StepDecodingPanel
from explorer.workspace import Workspace
from seqmodels.config import BOS_ID, build_model, make_config

# showing a top-level widget on the offscreen platform always logs this; it is not our warning

SENTENCES = ["the cat sat", "a dog ran far", "the dog sat down", "a cat ran"]
SOURCE = "the dog ran"


def tiny_workspace():
    src_tok = WordTokenizer.train(SENTENCES)
    tgt_tok = WordTokenizer.train([s.upper() for s in SENTENCES])
    torch.manual_seed(1)
    config = make_config("transformer", "tiny", vocab_size=tgt_tok.vocab_size,
                         src_vocab_size=src_tok.vocab_size)
    return Workspace(model=build_model(config), tokenizer=tgt_tok, src_tokenizer=src_tok)


def next_token_probs(ws, prefix):
    """Teacher-forced reference: p(next | source, prefix) from the model's training forward."""
    src = torch.tensor([encode_context(ws, SOURCE)])
    tgt_in = torch.tensor([[BOS_ID] + prefix])
    ws.model.eval()
    with torch.no_grad():
        logits = ws.model(src, tgt_in)  # (1, T, V)
    return F.softmax(logits[0, -1].double(), dim=-1).numpy()


@pytest.fixture
def panel(qtbot):
    bus = AppBus()
    panel = StepDecodingPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    panel.form.boxes["max_len"].setValue(6)
    bus.set_workspace(tiny_workspace())
    panel.set_source(SOURCE)
    return panel


def test_greedy_steps_forward_and_back(panel):
    ws = panel.workspace
    reference = greedy(ws.model, encode_context(ws, SOURCE), max_len=6, tokenizer=ws.tokenizer)
    assert panel.decoder.steps_taken == 0 and panel.decoder.output.token_ids == []
    for n in range(1, 4):
        probs = next_token_probs(ws, reference.token_ids[: n - 1])
        top = np.sort(probs)[::-1][:10]
        np.testing.assert_allclose(panel.topk_chart.values, top, atol=1e-5)
        assert panel.step()
        assert panel.decoder.output.token_ids == reference.token_ids[:n]
    assert "Output so far" in panel.output_label.text()
    assert panel.back() and panel.decoder.output.token_ids == reference.token_ids[:2]
    np.testing.assert_allclose(panel.topk_chart.values,
                               np.sort(next_token_probs(ws, reference.token_ids[:2]))[::-1][:10],
                               atol=1e-5)
    # The attention chart shows the chosen layer and head of the decoder's attention.
    panel.picker.select(1, 3)
    np.testing.assert_allclose(panel.attention_chart.values, panel.decoder.attention[1, 3])
    assert panel.attention_chart.labels == panel.decoder.source_tokens
    panel.reset()
    assert panel.decoder.steps_taken == 0 and not panel.back_button.isEnabled()


def test_keyboard_shortcuts_and_play(panel, qtbot):
    panel.setFocus()
    qtbot.keyClick(panel, Qt.Key_Right)
    qtbot.keyClick(panel, Qt.Key_Right)
    assert panel.decoder.steps_taken == 2
    qtbot.keyClick(panel, Qt.Key_Left)
    assert panel.decoder.steps_taken == 1
    qtbot.keyClick(panel, Qt.Key_Home)
    assert panel.decoder.steps_taken == 0
    panel.speed_box.setValue(30.0)
    qtbot.keyClick(panel, Qt.Key_Space)
    assert panel.timer.isActive()
    qtbot.waitUntil(lambda: panel.decoder.done, timeout=5000)
    assert not panel.timer.isActive() and panel.play_button.text() == "Play"
    assert "Right" in panel.step_button.toolTip() and "Space" in panel.play_button.toolTip()


def test_sampling_shows_the_truncated_distribution_and_replays_with_the_seed(panel):
    panel.strategy_box.setCurrentIndex(panel.strategy_box.findData("sample"))
    panel.form.boxes["top_k"].setValue(5)
    panel.form.boxes["temperature"].setValue(1.5)
    panel.form.boxes["seed"].setValue(7)
    ws = panel.workspace
    engine = sample(ws.model, encode_context(ws, SOURCE), temperature=1.5, top_k=5, seed=7,
                    max_len=6, tokenizer=ws.tokenizer)
    for n in range(3):
        prefix = panel.decoder.output.token_ids
        panel.step()
        # Reference: softmax(logits / T), keep the 5 most probable, renormalise.
        probs = next_token_probs(ws, prefix) ** (1 / 1.5)
        top = np.sort(probs / probs.sum())[::-1][:5]
        np.testing.assert_allclose(panel.sample_chart.values, top / top.sum(), atol=1e-5)
        chosen = panel.decoder.output.token_ids[-1]
        highlighted = [i for i, b in enumerate(panel.sample_chart.bars.opts["brushes"])
                       if b is panel.sample_chart.highlight_brush]
        assert panel.sample_chart.labels[highlighted[0]] == ws.tokenizer.tokens([chosen])[0]
    first = list(panel.decoder.output.token_ids)
    assert first == engine.hypothesis.token_ids[:3]
    panel.reset()  # the same seed replays the same samples
    for _ in range(3):
        panel.step()
    assert panel.decoder.output.token_ids == first


def test_beam_strategy_shows_the_live_beam(panel):
    panel.strategy_box.setCurrentIndex(panel.strategy_box.findData("beam"))
    panel.form.boxes["beam_size"].setValue(3)
    panel.form.boxes["alpha"].setValue(0.0)
    for _ in range(2):
        panel.step()
    live = panel.decoder.beam
    assert panel.beam_table.rowCount() == len(live) == 3
    scores = [float(panel.beam_table.item(r, 1).text()) for r in range(3)]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(live[0].score, abs=1e-3)
    tables = panel.tables()
    assert {"output", "next_tokens", "attention", "beam"} <= set(tables)


def test_every_next_token_is_readable_at_the_default_dock_size(panel, qtbot):
    panel.resize(830, 420)  # the dock's size in the default main window
    chart = panel.topk_chart
    qtbot.waitUntil(lambda: panel.plots.width() < 830 and chart.rows_that_fit() >= 10,
                    timeout=3000)
    # One row per token, each its own tick on the token axis, with its probability printed.
    ticks = chart.plot.getAxis("left")._tickLevels[0]
    assert [label for _, label in ticks] == chart.labels and len(chart.labels) == 10
    assert list(chart.bars.opts["y"]) == list(range(10))
    shown = [t.textItem.toPlainText().strip() for t in chart.value_texts if t.isVisible()]
    assert shown == [f"{v:.3f}" for v in chart.values]
    low, high = chart.plot.getViewBox().viewRange()[1]
    assert low <= 0 and high >= 9  # all ten rows in view
    # The sampling chart takes a column only when sampling, with the seed in its caption.
    assert panel.sample_chart.plot not in panel.plots.ci.items
    panel.strategy_box.setCurrentIndex(panel.strategy_box.findData("sample"))
    panel.form.boxes["seed"].setValue(11)
    panel.step()
    assert panel.sample_chart.plot in panel.plots.ci.items
    assert "seed 11" in panel.sample_caption.text() and panel.sample_caption.isVisible()


def test_why_asks_for_the_last_output_token_to_be_explained(panel, qtbot):
    panel.step()
    panel.step()
    ids = list(panel.decoder.output.token_ids)
    with qtbot.waitSignal(panel.bus.token_pick_requested, timeout=3000) as asked, \
            qtbot.waitSignal(panel.bus.show_panel, timeout=3000) as shown:
        qtbot.keyClick(panel, Qt.Key_E)
    assert asked.args[0] == pick_token(panel.workspace, SOURCE, ids, "step-through decoding")
    assert asked.args[0].row == 1 and shown.args == ["attribution"]
