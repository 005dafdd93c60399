"""The training-curves and BLEU panels, fed through the bus exactly as the controller feeds them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from explorer.events import EvalMetrics, StepMetrics
from explorer.ui.bus import AppBus
from explorer.ui.panels.bleu import BleuPanel, matched_orders, orders_from_matches
from explorer.ui.live_plots import GrowingBuffer
from explorer.ui.panels.curves import TrainingCurvesPanel

# The offscreen platform cannot resize windows to their size hints and says so; not a bug of ours.


def steps(start: int, count: int, clip: float = 1.0) -> list[StepMetrics]:
    out = []
    for step in range(start, start + count):
        loss = 4.0 / math.sqrt(step)
        norm = 3.0 / step**0.25
        out.append(StepMetrics(step, loss, 1e-3 * (1 + step % 3), norm, min(norm, clip), 100,
                               5e4, step * 0.01))
    return out


def test_growing_buffer_doubles_and_keeps_every_row():
    buffer = GrowingBuffer(2, capacity=4)
    capacities = set()
    expected = []
    for i in range(1000):
        rows = np.array([[i, 2 * i], [i, -i]], dtype=float)
        buffer.extend(rows)
        expected += rows.tolist()
        capacities.add(len(buffer._data))
    assert buffer.view().tolist() == expected
    assert len(capacities) <= 11  # 4, 8, ... 2048: amortised doubling, not a copy per append
    view = buffer.view()
    assert np.shares_memory(view, buffer._data)  # setData gets a view, not a copy


@pytest.fixture
def bus(qapp):
    return AppBus()


def test_curves_show_loss_perplexity_lr_and_norms_with_the_clip_line(qtbot, bus):
    from explorer.training.config import TrainConfig

    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.show()
    assert not panel.has_content()
    bus.train_config_changed.emit(TrainConfig(clip=0.5))
    batch = steps(1, 50, clip=0.5)
    bus.step_metrics.emit(batch[:20])
    bus.step_metrics.emit(batch[20:])
    assert panel.has_content()
    # the first batch is drawn at once; the second waits for the next redraw, a moment later
    assert len(panel.curves["train_loss"].xData) == 20
    last_drawn = panel.curves["grad_clipped"]
    qtbot.waitUntil(lambda: last_drawn.xData is not None and len(last_drawn.xData) == 50)
    x, y = panel.curves["train_loss"].xData, panel.curves["train_loss"].yData
    assert x.tolist() == list(range(1, 51))
    assert y.tolist() == [s.loss for s in batch]
    ppl = panel.curves["train_ppl"].yData
    np.testing.assert_allclose(ppl, np.exp([s.loss for s in batch]))
    lr = panel.curves["lr"].yData
    assert lr.tolist() == [s.lr for s in batch]
    before = panel.curves["grad"].yData
    after = panel.curves["grad_clipped"].yData
    assert before.tolist() == [s.grad_norm for s in batch]
    assert after.max() <= 0.5 < before.max()  # clipped norms never exceed tau
    assert panel.tau_line.isVisible() and panel.tau_line.value() == pytest.approx(math.log10(0.5))
    # "τ = 0.5" is named beside the plot, on its right axis, not over the curves
    grad_plot = panel.plots["grad_norm"]
    assert grad_plot.getAxis("right").isVisible()
    assert grad_plot.getAxis("right")._tickLevels == [[(math.log10(0.5), "τ = 0.5")], []]
    axis = grad_plot.getAxis("right")
    placed = axis.parentItem().mapRectToScene(axis.geometry())
    assert placed.left() >= grad_plot.getViewBox().sceneBoundingRect().right() - 1

    bus.eval_metrics.emit(EvalMetrics(step=50, val_loss=0.7, perplexity=math.exp(0.7),
                                      token_accuracy=0.81))
    panel.redraw()
    x, y = panel.curves["val_acc"].xData, panel.curves["val_acc"].yData
    assert (x.tolist(), y.tolist()) == ([50.0], [0.81])
    text = panel.describe_step(24.6)  # hover: the nearest recorded step, exact values
    assert text.startswith(f"step 25: loss {batch[24].loss:.4f}")
    assert "accuracy 81.00%" in text
    for plot in panel.plots.values():
        assert plot.ctrl.clipToViewCheck.isChecked()
        assert plot.ctrl.downsampleCheck.isChecked() and plot.ctrl.peakRadio.isChecked()
    header, rows = panel.tables()["train"]
    assert header[:2] == ["step", "loss"] and len(rows) == 50


def test_curves_stay_smooth_at_a_hundred_thousand_steps(qtbot, bus):
    from PySide6.QtWidgets import QApplication

    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    qtbot.waitExposed(panel)
    for start in range(1, 100_001, 10_000):
        bus.step_metrics.emit(steps(start, 10_000))
    QApplication.processEvents()
    for start in range(100_001, 100_031, 10):  # a few more emits, each with a paint
        bus.step_metrics.emit(steps(start, 10))
        panel.redraw()
        panel.view.viewport().repaint()
    assert panel.train.size == 100_030
    # peak downsampling + clip-to-view: a redraw draws a few points per pixel, not 100k per curve
    # (what a redraw costs is measured by benchmarks/bench_curves.py)
    curve, view = panel.curves["train_loss"], panel.plots["loss"].getViewBox()
    assert curve.xData.size == 100_030
    shown, _ = curve.getData()  # what is drawn
    per_pixel = 2 * curve.opts["autoDownsampleFactor"]  # peak mode: a min and a max per bin
    assert 0 < shown.size <= per_pixel * view.width() + 2, (shown.size, view.width())
    assert shown.min() <= 100 and shown.max() >= 99_000  # the whole run, first steps to last
    view.setXRange(50_000, 50_100, padding=0)  # zoomed in: only the steps in view (and one past)
    panel.redraw(force=True)
    shown, values = curve.getData()
    assert 49_990 <= shown.min() and shown.max() <= 50_110 and shown.size >= 100
    by_step = dict(zip(curve.xData.tolist(), curve.yData.tolist()))
    assert all(by_step[x] == y for x, y in zip(shown.tolist(), values.tolist()))  # exact, not averaged


def test_a_new_workspace_replaces_the_curves_with_its_history(qtbot, bus):
    from types import SimpleNamespace

    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.show()
    bus.step_metrics.emit(steps(1, 5))
    history = [{"step": 1, "loss": 2.0, "lr": 1e-3, "grad_norm": 1.5, "grad_norm_clipped": 1.0},
               {"step": 2, "loss": 1.5, "lr": 1e-3, "grad_norm": 0.8, "grad_norm_clipped": 0.8,
                "val_loss": 1.4, "perplexity": math.exp(1.4), "token_accuracy": 0.5}]
    workspace = SimpleNamespace(history=history, train_config=None)
    bus.set_workspace(workspace)
    assert panel.curves["train_loss"].yData.tolist() == [2.0, 1.5]
    assert panel.curves["val_loss"].yData.tolist() == [1.4]
    bus.set_workspace(workspace)  # the same workspace again: nothing is lost
    assert panel.train.size == 2


def test_curves_out_of_sight_wait_until_they_are_shown(qtbot, bus):
    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.show()
    bus.step_metrics.emit(steps(1, 5))
    assert len(panel.curves["train_loss"].xData) == 5
    panel.hide()  # its dock went behind another's tab
    bus.step_metrics.emit(steps(6, 5))
    panel.redraw()
    assert len(panel.curves["train_loss"].xData) == 5
    panel.show()
    assert len(panel.curves["train_loss"].xData) == 10
    panel.hide()
    bus.step_metrics.emit(steps(11, 5))
    panel.flush_pending_draws()  # an export draws everything, seen or not
    assert len(panel.curves["train_loss"].xData) == 15


def test_matched_orders_follow_the_clipped_precision_of_the_lecture_notes():
    from explorer.metrics.bleu import matched_ngrams

    # lecture example: "He He He eats tasty fruit" against "He eats a sweet apple": the first
    # "He" matches (clipped to the reference's one "He"), and the bigram "He eats" at 2..3
    hyp, ref = "He He He eats tasty fruit", "He eats a sweet apple"
    orders = matched_orders(hyp.split(), ref.split())
    assert orders == [1, 0, 2, 2, 0, 0]
    assert orders == orders_from_matches(6, matched_ngrams(hyp, ref))
    # a bigram match marks both of its tokens 2
    assert matched_orders("the cat sat".split(), "a cat sat down".split()) == [0, 2, 2]
    assert orders_from_matches(4, [(1, 0, ("a",)), (2, 2, ("b", "c"))]) == [1, 0, 2, 2]


def test_bleu_panel_breakdown_matches_sacrebleu_and_highlights_the_example(qtbot, bus):
    import sacrebleu

    from explorer.metrics.bleu import corpus_bleu, sentence_example

    hyp = "He He He eats tasty fruit"
    refs = ["He eats a sweet apple", "He is eating a tasty apple"]
    breakdown = corpus_bleu([hyp], [[refs[0]], [refs[1]]])
    reference = sacrebleu.corpus_bleu([hyp], [[refs[0]], [refs[1]]])
    assert breakdown.counts[0] == 3 and breakdown.totals[0] == 6  # the notes: clipped 3 / 6

    panel = BleuPanel(bus)
    qtbot.addWidget(panel)
    assert not panel.has_content()
    example = sentence_example(hyp, refs[1])
    bus.eval_metrics.emit(EvalMetrics(step=10, val_loss=1.0, perplexity=math.e, token_accuracy=0.5,
                                      bleu=breakdown.score, bleu_detail=breakdown, example=example))
    assert panel.has_content()
    for n in range(4):
        assert panel.table.item(n, 1).text() == str(reference.counts[n])
        assert panel.table.item(n, 2).text() == str(reference.totals[n])
        assert panel.table.item(n, 3).text() == f"{reference.precisions[n]:.2f}%"
    assert f"BP = {reference.bp:.3f}" in panel.summary.text()
    assert f"c (hypothesis length) = {reference.sys_len}" in panel.summary.text()
    assert f"r (reference length) = {reference.ref_len}" in panel.summary.text()
    x, y = panel.curve.xData, panel.curve.yData
    assert (x.tolist(), y.tolist()) == ([10.0], [pytest.approx(reference.score)])
    # the first "He" and "tasty" match (1-grams) in the hypothesis, as do their partners in the
    # reference
    assert panel.example_orders == ([1, 0, 0, 0, 1, 0], [1, 0, 0, 0, 1, 0])
    html = panel.example_view.toHtml()
    assert html.count("#fde68a") == 2 + 2 + 1  # hypothesis, reference, and the legend's swatch



def test_bleu_panel_says_when_lengths_count_characters(qtbot, bus):
    from explorer.metrics.bleu import corpus_bleu

    panel = BleuPanel(bus)
    qtbot.addWidget(panel)
    for tokenize, unit in (("char", ", in characters"), ("13a", "")):
        breakdown = corpus_bleu(["rgeebgx"], [["rgeebgr"]], tokenize=tokenize)
        bus.eval_metrics.emit(EvalMetrics(step=1, val_loss=1.0, perplexity=math.e, token_accuracy=0.5,
                                          bleu=breakdown.score, bleu_detail=breakdown))
        assert panel.summary.text().endswith(f"r (reference length) = {breakdown.ref_len}{unit}")
    assert corpus_bleu(["rgeebgx"], [["rgeebgr"]], tokenize="char").ref_len == 7

def test_small_curve_plots_space_their_step_ticks_apart(qtbot, bus):
    """In a dock of ~450 x 490 a third-wide plot over 0..860 steps printed
    "0 200400600": the labels now keep a gap between them."""
    from PySide6.QtGui import QFontMetricsF

    from explorer.ui.plot_style import drawn_labels

    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(450, 490)
    panel.show()
    qtbot.waitExposed(panel)
    bus.step_metrics.emit(steps(1, 860))
    for step in (200, 860):
        bus.eval_metrics.emit(EvalMetrics(step=step, val_loss=0.7, perplexity=2.0,
                                          token_accuracy=0.9))
    panel.redraw()
    for name in ("loss", "perplexity", "accuracy", "lr"):
        axis = panel.plots[name].getAxis("bottom")
        # grab() paints, and a pyqtgraph view autoranges just before it paints
        qtbot.waitUntil(lambda: panel.grab() and len(drawn_labels(axis)) >= 1)
        texts = drawn_labels(axis)
        if name == "loss":
            assert len(texts) >= 2, texts
        if len(texts) < 2:
            continue
        labels = [float(text) for text in texts]
        metrics = QFontMetricsF(axis.style["tickFont"] or axis.font())
        widest = max(metrics.horizontalAdvance(text) for text in texts)
        x_range = panel.plots[name].viewRange()[0]
        pixels_per_step = axis.geometry().width() / (x_range[1] - x_range[0])
        gap = (labels[1] - labels[0]) * pixels_per_step - widest
        assert gap >= metrics.averageCharWidth(), (name, texts)
    legend_row = panel.legend
    assert panel.columns == 2  # 450 px is too narrow for three plots abreast
    assert legend_row in panel.view.ci.items
    for plot in panel.plots.values():  # the shared legend sits below, covering no plot
        assert not legend_row.sceneBoundingRect().intersects(plot.vb.sceneBoundingRect())


def test_bleu_breakdown_headers_and_rows_fit(qtbot, bus):
    from explorer.metrics.bleu import corpus_bleu

    panel = BleuPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(450, 400)
    panel.show()
    qtbot.waitExposed(panel)
    breakdown = corpus_bleu(["the cat sat on the mat"], [["the cat sat on a mat"]])
    bus.eval_metrics.emit(EvalMetrics(step=10, val_loss=1.0, perplexity=math.e, token_accuracy=0.5,
                                      bleu=breakdown.score, bleu_detail=breakdown))
    table, header = panel.table, panel.table.horizontalHeader()
    metrics = header.fontMetrics()
    for column in range(table.columnCount()):
        title = table.horizontalHeaderItem(column).text()
        for line in title.split("\n"):  # every line of every title, not clipped
            assert metrics.horizontalAdvance(line) + 8 <= header.sectionSize(column), title
    # all four rows show above the summary, none hidden under it
    qtbot.waitUntil(lambda: table.rowViewportPosition(3) + table.rowHeight(3)
                    <= table.viewport().height())
    assert table.geometry().bottom() < panel.summary.geometry().top()


def test_bleu_panel_applies_to_encoder_decoders_only_so_the_smoke_run_skips_it_for_lms(qtbot, bus):
    """`explorer gui --smoke` waits for the panels that apply: an LM checkpoint has no BLEU, and
    waiting for it timed the smoke run out with exit 1 (issue 27)."""
    from test_attention_panel import char_workspace

    panel = BleuPanel(bus)
    qtbot.addWidget(panel)
    assert not panel.applies_to(char_workspace("gpt"))
    assert panel.applies_to(char_workspace("seq2seq")) and panel.applies_to(None)


def test_step_axes_are_ticked_at_whole_steps_around_a_single_point(qtbot, bus):
    # the BLEU curve and the curves' evaluations after the first evaluation: one point at step 0
    curves, bleu = TrainingCurvesPanel(bus), BleuPanel(bus)
    for panel in (curves, bleu):
        qtbot.addWidget(panel)
        panel.resize(700, 500)
        panel.show()
    bus.eval_metrics.emit(EvalMetrics(step=0, val_loss=2.0, perplexity=math.e**2,
                                      token_accuracy=0.1, bleu=3.0))
    curves.flush_pending_draws()
    plots = [curves.plots["loss"], curves.plots["accuracy"], bleu.plot]
    for plot in plots:
        axis = plot.getAxis("bottom")
        plot.getViewBox().updateAutoRange()
        low, high = plot.getViewBox().viewRange()[0]
        assert low < 0 < high < 2  # the case at issue: the point and less than two steps in view
        values = [v for _, level in axis.tickValues(low, high, axis.width()) for v in level]
        assert 0.0 in values and all(v == round(v) for v in values), (low, high, values)


def _step_axes_laid_out(panel, bus, first: int, count: int, batch: int = 10) -> int:
    """Feed `count` more steps in batches, each redrawn; how many times a plot's step axis got a
    new range, each one a regeneration of its ticks and labels at the next paint (pyqtgraph's
    AxisItem drops its picture on every range change)."""
    axes = [plot.getAxis("bottom") for plot in panel.plots.values()]
    ranges = [list(axis.range) for axis in axes]
    changes = 0
    for start in range(first, first + count, batch):
        bus.step_metrics.emit(steps(start, batch))
        panel.redraw(force=True)
        for k, axis in enumerate(axes):
            if list(axis.range) != ranges[k]:
                changes += 1
                ranges[k] = list(axis.range)
    return changes


def test_a_run_lays_out_its_step_axes_once_and_repaints_only_the_data(qtbot, bus):
    panel = TrainingCurvesPanel(bus)
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    qtbot.waitExposed(panel)
    bus.step_metrics.emit(steps(1, 10))
    panel.redraw(force=True)
    # open-ended (no target): the step axes follow the data, laid out again at each headroom
    assert _step_axes_laid_out(panel, bus, 11, 490) > 2 * len(panel.plots)
    bus.state.set_training("running", target_steps=2000)  # a run to step 2000
    panel.redraw(force=True)
    low, high = panel.plots["loss"].getViewBox().viewRange()[0]
    assert low <= 1 and high >= 2000
    assert _step_axes_laid_out(panel, bus, 501, 1500) == 0  # new points: the data alone change
    assert len(panel.curves["train_loss"].xData) == 2000
