"""Compare panel: three strategies side by side, BLEU against sacreBLEU, and the search for an
input where beam search finds a more probable output than greedy (lecture 8's "Those apples")."""

import random

import numpy as np
import pytest
import sacrebleu
import torch

from explorer.analysis.token_pick import pick_token
from explorer.data.tasks import Splits
from explorer.data.tokenizers import WordTokenizer
from explorer.decoding import encode_context, score_ids
from explorer.decoding.jobs import run_find_example
from explorer.decoding.settings import DecodeSettings
from explorer.ui.bus import AppBus
from explorer.ui.panels.compare import ComparePanel, highlight_matches
from explorer.workspace import Workspace
from seqmodels.config import BOS_ID, build_model, make_config

# showing a top-level widget on the offscreen platform always logs this; it is not our warning

WORDS = "the a cat dog sat ran far down big red small old".split()


SEED = 0  # torch's seed for the model; the tests hold for any (test_find_... tries several)
SEARCH_SETTINGS = DecodeSettings(max_len=8, beam_size=3)  # what the panel fixture's form is set to


def workspace_with_data(seed=SEED):
    """An untrained GRU seq2seq with sharpened output logits: its outputs differ between greedy
    and beam search on some inputs (a trained model does too, but training takes too long here).
    On about one seed in seven no validation input shows beam beating greedy, so the first of
    seed, seed + 1, ... whose model has one is used: the example the panel must find exists."""
    rng = random.Random(0)
    sources = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) for _ in range(16)]
    tok = WordTokenizer.train(WORDS)
    data = Splits(train=[], val=[(s, s) for s in sources], test=[])
    for attempt in range(seed, seed + 10):
        torch.manual_seed(attempt)
        model = build_model(make_config("seq2seq", "tiny", vocab_size=tok.vocab_size,
                                        src_vocab_size=tok.vocab_size))
        with torch.no_grad():
            model.head.weight.mul_(3.0)
        workspace = Workspace(model=model, tokenizer=tok, src_tokenizer=tok, data=data)
        if run_find_example(workspace, SEARCH_SETTINGS) is not None:
            return workspace
    raise AssertionError(f"no model among seeds {seed}..{seed + 9} has beam beating greedy")


def open_panel(qtbot, seed=SEED):
    bus = AppBus()
    panel = ComparePanel(bus)
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    panel.form.set_values(max_len=SEARCH_SETTINGS.max_len, beam_size=SEARCH_SETTINGS.beam_size)
    with qtbot.waitSignal(panel.compared, timeout=10000):
        bus.set_workspace(workspace_with_data(seed))
    return panel


@pytest.fixture
def panel(qtbot):
    panel = open_panel(qtbot)
    yield panel
    panel.jobs.shutdown()


def teacher_forced_logprobs(model, context, target_ids):
    src = torch.tensor([context])
    tgt_in = torch.tensor([[BOS_ID] + target_ids[:-1]])
    model.eval()
    with torch.no_grad():
        return torch.log_softmax(model(src, tgt_in)[0].double(), dim=-1).numpy()  # (T, V)


# 5: its model's example is not the first validation input, whose beam output is the same;
# 9: no input of its model shows beam beating greedy, so seed 10's model is searched
@pytest.mark.parametrize("seed", [SEED, 5, 9])
def test_find_an_example_where_beam_beats_greedy(qtbot, seed):
    panel = open_panel(qtbot, seed)
    try:
        check_the_example_found(panel, qtbot)
    finally:
        panel.jobs.shutdown()


def check_the_example_found(panel, qtbot):
    with qtbot.waitSignal(panel.example_found, timeout=20000) as blocker:
        panel.find_button.click()
    example = blocker.args[0]
    assert example is not None and example.margin > 0
    ws = panel.workspace
    context = encode_context(ws, example.source)
    # Both scores are the model's own teacher-forced log-probabilities.
    for hyp in (example.greedy, example.beam):
        assert score_ids(ws.model, context, hyp.token_ids).total == pytest.approx(hyp.score, abs=1e-4)
    # Greedy really took the most probable token at every step...
    greedy_lp = teacher_forced_logprobs(ws.model, context, example.greedy.token_ids)
    assert list(greedy_lp.argmax(axis=1)) == example.greedy.token_ids
    # ...so where the two part, greedy's word was locally better, yet beam's sentence wins.
    i = example.divergence
    assert example.greedy.token_ids[:i] == example.beam.token_ids[:i]
    assert greedy_lp[i, example.greedy.token_ids[i]] > greedy_lp[i, example.beam.token_ids[i]]
    assert example.beam.score > example.greedy.score
    assert "greedy took" in panel.explanation.text()
    # The panel then shows that input decoded three ways, beam's output being the more probable.
    # The source box shows the example at once, but until its decode arrives the cards still hold
    # the outputs of the input shown before (another source, or the same one at alpha 0.6), whose
    # beam output may be the same as the example's: wait for the example's own input.
    settings = panel.form.settings()
    assert (settings.alpha, settings.beam_size) == (0.0, example.width)
    example_input = (example.source, example.reference or "", settings)
    qtbot.waitUntil(lambda: panel.outputs_input == example_input, timeout=10000)
    shown = {o.strategy: o.hypothesis for o in panel.outputs}
    assert shown["beam"].token_ids == example.beam.token_ids
    assert shown["greedy"].token_ids == example.greedy.token_ids
    assert shown["greedy"].score == pytest.approx(example.greedy.score, abs=1e-6)
    assert "(most probable)" not in panel.cells["greedy"].text()


def test_sentence_bleu_matches_sacrebleu_and_matches_are_highlighted(panel, qtbot):
    greedy_text = panel.outputs[0].hypothesis.text
    reference = greedy_text + " the cat"
    with qtbot.waitSignal(panel.compared, timeout=10000):
        panel.set_source(panel.source_box.text(), reference)
    for output in panel.outputs:
        expected = sacrebleu.sentence_bleu(output.hypothesis.text, [reference])
        assert output.bleu.score == pytest.approx(expected.score, abs=1e-6)
        assert output.bleu.counts == list(expected.counts)
        assert len(output.matched) == sum(expected.counts)
        assert f"{output.bleu.score:.1f}" in panel.cells[output.strategy].text()
    greedy = panel.outputs[0]
    # Every greedy token is in the reference, so every token is highlighted.
    assert panel.cells["greedy"].text().count("background-color") == len(greedy.bleu_tokens)
    assert panel.cells["greedy"].text().count("color:#111111") == len(greedy.bleu_tokens)  # any theme
    header, rows = panel.tables()["outputs"]
    assert [r[0] for r in rows] == ["greedy", "beam", "sample"]
    np.testing.assert_allclose(panel.score_chart.values,
                               [-o.hypothesis.score for o in panel.outputs])


def test_highlight_uses_the_longest_matching_ngram():
    html = highlight_matches(["a", "b", "c"], [(1, 0, ("a",)), (2, 0, ("a", "b")), (1, 2, ("c",))])
    assert html.count("#ffd280") == 2  # a, b inside a matched bigram
    assert html.count("#fff2a8") == 1  # c matched as a unigram only


def test_cards_show_their_whole_text_at_the_default_dock_size(panel, qtbot):
    long_reference = " ".join(panel.outputs[0].hypothesis.text.split() * 3) + " the end"
    with qtbot.waitSignal(panel.compared, timeout=10000):
        panel.set_source(panel.source_box.text(), long_reference)
    panel.resize(830, 420)  # the dock's size in the default main window
    qtbot.waitUntil(lambda: panel.width() == 830, timeout=3000)
    for strategy, cell in panel.cells.items():
        qtbot.waitUntil(lambda cell=cell: cell.height() >= cell.heightForWidth(cell.width()),
                        timeout=3000)
        assert "BP =" in cell.text()  # the last line is there, and the height shows it
    # Long texts are shown from their beginning, in full in the tooltip.
    assert panel.reference_box.cursorPosition() == 0
    assert panel.reference_box.toolTip() == long_reference


def test_clicking_a_cards_token_asks_the_prober_to_explain_it(panel, qtbot):
    """Each card's output tokens are clickable: a click on the second token of greedy's output
    goes through the Prober (the probe input becomes that output so far) to the attribution view."""
    from PySide6.QtCore import QPoint, Qt

    from explorer.ui.probing import Prober

    Prober(panel.bus, panel)
    for output in panel.outputs:
        assert panel.strips[output.strategy].tokens == [str(t) for t in output.hypothesis.tokens]
    greedy = next(o for o in panel.outputs if o.strategy == "greedy").hypothesis
    strip = panel.strips["greedy"]
    qtbot.waitUntil(lambda: strip.height() >= strip.heightForWidth(strip.width()) > 0, timeout=3000)
    expected = pick_token(panel.workspace, panel.outputs_input[0], greedy.token_ids[:2],
                          "the compare panel (greedy)")
    with qtbot.waitSignal(panel.bus.token_picked, timeout=3000) as picked:
        qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=strip.token_rect(1).center())
    assert picked.args[0] == expected and expected.token == str(greedy.tokens[1])
    assert panel.bus.probe_text == (expected.source, expected.target)
    between = QPoint(strip.token_rect(0).right() + 2, strip.token_rect(0).center().y())
    with qtbot.assertNotEmitted(panel.bus.token_pick_requested):  # between two chips: nothing
        qtbot.mouseClick(strip, Qt.MouseButton.LeftButton, pos=between)
