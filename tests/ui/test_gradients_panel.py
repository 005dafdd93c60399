"""The gradient-flow panel: probe curves against autograd, history, cells, clipping τ, playground."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from explorer.analysis.gradients import format_gradient
from explorer.analysis.probe import probe
from explorer.events import StepMetrics
from explorer.ui.bus import AppBus
from explorer.ui.panels.gradients import GradientFlowPanel
from explorer.ui.probing import Prober
from seqmodels.cells import cell_names

from test_attention_panel import char_workspace



def make_panel(qtbot):
    bus = AppBus()
    panel = GradientFlowPanel(bus)
    Prober(bus, panel)  # the controller's part: it probes, the panel draws
    qtbot.addWidget(panel)
    panel.resize(1200, 700)
    panel.show()
    return bus, panel


def test_rnn_lm_curve_is_dl_dh_t_and_cells_are_compared(qtbot):
    bus, panel = make_panel(qtbot)
    workspace = char_workspace("rnn-lm", cell="rnn")
    bus.set_workspace(workspace)
    qtbot.waitUntil(lambda: panel.has_content() and bool(panel.cell_curves) and not panel.busy(), timeout=15_000)
    source = panel.snapshot.source
    # independent reference: the per-step hidden states' gradients straight from autograd
    ids = workspace.tokenizer.encode(source)
    logits, trace = workspace.model(torch.tensor([ids[:-1]]), trace=True)
    loss = F.cross_entropy(logits[0], torch.tensor(ids[1:]))
    grads = torch.autograd.grad(loss, trace.hidden["lm.l0"])
    expected = np.array([float(g.norm()) for g in grads])
    np.testing.assert_allclose(panel.time_curves["lm.l0"].yData, expected, rtol=1e-5)
    assert list(panel.cell_curves) == list(cell_names())  # every registered cell
    assert "(trained)" in panel.cells_plot.legend.getLabel(panel.cell_items["rnn"]).text
    # the plain RNN's gradient from the last step's loss fades towards the start
    rnn = panel.cell_curves["rnn"]
    assert rnn[0] < rnn[-1] * 1e-3


def test_history_grows_one_row_per_probe_and_clipping_shows_tau(qtbot):
    bus, panel = make_panel(qtbot)
    workspace = char_workspace("seq2seq", attention="additive")
    bus.set_workspace(workspace)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=15_000)
    source, target = workspace.data.val[0]
    for step in (10, 20, 30):
        bus.probe.emit(probe(workspace, source, target, step))
    assert panel.grad_history.steps[-3:] == [10, 20, 30]
    matrix = panel.history.image.image
    assert matrix.shape == (len(panel.grad_history.steps), len(source) + 1)  # source tokens + <eos>
    assert [panel.layer_box.itemData(i) for i in range(panel.layer_box.count())] == list(panel.snapshot.grad_time)
    # people read layers numbered from 1: "encoder.l0" is "encoder layer 1"
    assert panel.layer_box.itemText(0) == "encoder layer 1"

    class Config:
        clip = 1.0

    bus.train_config_changed.emit(Config())
    bus.step_metrics.emit([StepMetrics(s, 1.0, 1e-3, 2.0 + s, 1.0, 10, 100.0, 0.1) for s in (1, 2, 3)])
    assert panel.tau_line.isVisible() and panel.tau_line.value() == pytest.approx(0.0)  # log10(1)
    # out of sight on its page: not drawn (the first batch after a quiet spell is handled at once)
    assert panel._norms_stale and panel.before_curve.yData is None
    panel.pages.show_page(2)  # the clipping page
    assert len(panel.before_curve.yData) == 3
    np.testing.assert_allclose(panel.before_curve.yData, [3.0, 4.0, 5.0])
    bus.step_metrics.emit([StepMetrics(4, 1.0, 1e-3, 6.0, 1.0, 10, 100.0, 0.1)])
    qtbot.waitUntil(lambda: len(panel.before_curve.yData) == 4)  # in sight: drawn as they come
    assert panel.tables()["clipping"][1][0] == [1, 3.0, 1.0, 1.0]


def test_transformer_shows_gradient_per_layer(qtbot):
    bus, panel = make_panel(qtbot)
    bus.set_workspace(char_workspace("transformer"))
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=15_000)
    labels = panel.snapshot.grad_depth_labels
    assert labels == ["encoder.layer0", "encoder.layer1", "decoder.layer0", "decoder.layer1"]
    np.testing.assert_allclose(panel.depth_curve.yData, panel.snapshot.grad_depth)
    assert (panel.snapshot.grad_depth > 0).all()


def test_playground_reproduces_the_notes_numbers(qtbot):
    bus, panel = make_panel(qtbot)
    panel.slider.setValue(1.1)
    assert panel.playground_value.text().endswith("= 13781")
    assert panel.playground_derivative[-1] == pytest.approx(1.1**100)
    panel.slider.setValue(0.9)
    assert panel.playground_value.text().endswith("= 0.0000266")
    panel.tanh_box.setChecked(True)
    with_tanh = panel.playground_derivative
    # tanh' <= 1 only shrinks the product
    assert with_tanh[-1] < 0.9**100
    assert format_gradient(1.1**100) == "13781" and format_gradient(0.9**100) == "0.0000266"


def test_clipping_axis_labels_do_not_pile_up_and_legends_cover_no_curve(qtbot):
    from explorer.ui.plot_style import drawn_labels

    bus, panel = make_panel(qtbot)
    panel.resize(830, 400)
    qtbot.waitExposed(panel)
    # norms between 0.06 and 1.3: pyqtgraph labelled every 0.1 step under 1, on top of each other
    norms = np.linspace(0.06, 1.3, 60)
    bus.step_metrics.emit([StepMetrics(s, 1.0, 1e-3, float(n), min(float(n), 1.0), 10, 100.0, 0.1)
                           for s, n in enumerate(norms)])
    panel.pages.show_page(2)
    axis = panel.clip_plot.getAxis("left")
    qtbot.waitUntil(lambda: len(drawn_labels(axis)) >= 2)
    labels = drawn_labels(axis)
    assert set(labels) <= {"0.05", "0.1", "0.2", "0.5", "1", "2"}, labels
    for plot in (panel.clip_plot, panel.cells_plot, panel.time_plot):
        assert not plot.legend.sceneBoundingRect().intersects(plot.vb.sceneBoundingRect())
    assert panel.depth_plot.legend is None and panel.playground_plot.legend is None  # no empty box


def test_history_of_an_rnn_is_step_by_time_and_of_a_transformer_step_by_block(qtbot):
    bus, panel = make_panel(qtbot)
    workspace = char_workspace("rnn-lm", cell="gru")
    bus.set_workspace(workspace)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=15_000)
    source = panel.snapshot.source
    for step in (5, 6):
        bus.probe.emit(probe(workspace, source, "", step))
    assert panel.layer_box.count() >= 1 and panel.layer_box.currentData() in panel.snapshot.grad_time
    layer = panel.layer_box.currentData()
    expected = np.log10(panel.snapshot.grad_time[layer])
    np.testing.assert_allclose(panel.history.image.image[-1], expected, rtol=1e-5)
    assert panel.history.image.image.shape[0] == len(panel.grad_history.steps)

    transformer = char_workspace("transformer")
    bus.set_workspace(transformer)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=15_000)
    source, target = transformer.data.val[0]
    bus.probe.emit(probe(transformer, source, target, 9))
    assert [panel.layer_box.itemText(i) for i in range(panel.layer_box.count())] == ["blocks (depth)"]
    depth = panel.snapshot.grad_depth
    np.testing.assert_allclose(panel.history.image.image[-1], np.log10(depth), rtol=1e-5)
    # layers from 1, under an axis titled "layer (block)"
    assert panel.history.col_labels == ["encoder 1", "encoder 2", "decoder 1", "decoder 2"]
    assert panel.tables()["depth"][1][0][0] == "encoder layer 1"
    assert panel.grad_history.steps[-1] == 9


def test_clipping_says_why_it_is_empty_and_draws_a_models_recorded_norms(qtbot):
    bus, panel = make_panel(qtbot)
    clipping = panel.views["clipping"]
    assert clipping.empty and clipping.message.startswith("Open or create a model")
    assert "clipping" not in panel.plot_items()  # no figure of empty axes
    workspace = char_workspace("rnn-lm", cell="rnn")
    bus.set_workspace(workspace)
    assert clipping.empty and clipping.message.startswith("No training step yet")
    # another model with a recorded history (metrics.jsonl rows): its norms, eval rows skipped
    recorded = char_workspace("rnn-lm", cell="gru")
    recorded.history = [{"step": s, "loss": 1.0, "lr": 1e-3, "grad_norm": 2.0 * s,
                         "grad_norm_clipped": min(2.0 * s, 1.0)} for s in range(1, 6)] + [
        {"event": "eval", "step": 5, "val_loss": 0.9}]
    bus.set_workspace(recorded)
    panel.pages.show_page(2)
    panel.flush_pending_draws()
    assert not clipping.empty and "clipping" in panel.plot_items()
    before, after = panel.before_curve, panel.after_curve  # xData, yData: before the log axis
    np.testing.assert_array_equal(before.xData, [1, 2, 3, 4, 5])
    np.testing.assert_allclose(before.yData, [2, 4, 6, 8, 10])
    np.testing.assert_allclose(after.yData, [1, 1, 1, 1, 1])
