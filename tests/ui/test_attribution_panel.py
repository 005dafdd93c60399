"""The attribution panel: the probe explained in its job runner (the core's numbers, drawn),
rollout, stop, export, live during training, and `explorer export --plots attribution,rollout`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.analysis.attribution import ALTERNATIVES, AttributionResult, AttributionSettings
from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.explain import ExplainRequest, explain
from explorer.analysis.rollout import RNN_REASON, RolloutResult
from explorer.analysis.token_pick import pick_token
from explorer.cli import main
from explorer.ui.panels.attribution import AttributionPanel
from tests.ui.test_inside_panels import char_workspace, open_panel


def _choose(box, data) -> None:
    box.setCurrentIndex(box.findData(data) if box.findData(data) >= 0 else box.findText(data))


def test_the_probe_is_explained_with_the_cores_numbers(qtbot, tmp_path):
    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, AttributionPanel, workspace)
    source, target = panel.probe_text
    result = panel.result
    assert isinstance(result, AttributionResult) and result.method == "ig"
    # by default integrated gradients runs to a 1% completeness gap
    expected = explain(workspace, source, target, ExplainRequest("ig", AttributionSettings(tolerance=0.01)))
    np.testing.assert_allclose(result.scores, expected.scores, atol=1e-6)
    assert result.tolerance == 0.01 and panel.steps_box.text() == "to gap"
    assert " steps to reach 1%" in panel.status.text()
    drawn = panel.scores_map.matrix
    np.testing.assert_allclose(drawn, result.scores.astype(np.float32), atol=1e-6)
    assert panel.scores_map.row_labels == result.rows
    assert "completeness gap" in panel.status.text()
    for widget in (panel.method_box, panel.baseline_box, panel.steps_box, panel.tolerance_box, panel.batch_box,
                   panel.contrast_box, panel.fusion_box, panel.explain_button, panel.stop_button):
        assert widget.toolTip()

    _choose(panel.method_box, "rollout")  # following: a change recomputes
    qtbot.waitUntil(lambda: isinstance(panel.result, RolloutResult) and not panel.busy(), timeout=30_000)
    assert panel.stack.currentWidget() is panel.rollout_map
    assert [panel.map_box.itemText(i) for i in range(panel.map_box.count())] == [
        "encoder", "decoder", "decoder → source"]
    np.testing.assert_allclose(panel.rollout_map.matrix.sum(1), 1.0, atol=1e-5)

    written = panel.export(tmp_path)
    names = {path.name for path in written}
    assert {"attribution_map.png", "attribution_map.svg", "attribution_encoder.csv",
            "attribution_result.json"} <= names
    assert json.loads((tmp_path / "attribution_result.json").read_text())["method"] == "rollout"


def test_contrast_and_bad_contrast(qtbot):
    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, AttributionPanel, workspace)
    _choose(panel.method_box, "grad-input")
    qtbot.waitUntil(lambda: panel.result.method == "grad-input" and not panel.busy(), timeout=30_000)
    panel.contrast_box.setEditText("no-such-token")
    panel.contrast_box.lineEdit().editingFinished.emit()
    qtbot.waitUntil(lambda: "not in the model's vocabulary" in panel.status.text(), timeout=30_000)
    assert "\n" not in panel.status.text()


def test_a_picked_token_is_explained_alone_and_its_alternatives_are_the_contrasts(qtbot):
    """A pick goes through the Prober (the probe input changes), the view explains that row only
    with the core's numbers, and the contrast list is the model's top tokens there."""
    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, AttributionPanel, workspace)
    _choose(panel.method_box, "grad-input")
    qtbot.waitUntil(lambda: panel.result.method == "grad-input" and not panel.busy(), timeout=30_000)
    source = "abcd"
    output = workspace.tokenizer.encode("dcb")
    pick = pick_token(workspace, source, output, "a test")
    with qtbot.waitSignal(panel.bus.probe_input_changed, timeout=10_000):
        panel.bus.token_pick_requested.emit(pick)
    qtbot.waitUntil(lambda: panel.result.rows == [pick.token] and not panel.busy(), timeout=30_000)
    assert panel.probe_text == (source, "dcb") and panel.pick_label.isVisible()
    expected = explain(workspace, source, "dcb", ExplainRequest("grad-input", AttributionSettings(), rows=(2,)))
    np.testing.assert_allclose(panel.result.scores, expected.scores, atol=1e-6)
    logits = workspace.model.eval()(*attribution_input(workspace, source, "dcb").inputs)[0, 2]
    top = [i for i in logits.topk(ALTERNATIVES + 1).indices.tolist() if i != output[-1]][:ALTERNATIVES]
    listed = [panel.contrast_box.itemText(i) for i in range(1, panel.contrast_box.count())]
    assert listed == workspace.tokenizer.tokens(top)

    panel.contrast_box.setCurrentIndex(1)
    panel.contrast_box.activated.emit(1)
    qtbot.waitUntil(lambda: panel.result.contrast == listed[0] and not panel.busy(), timeout=30_000)
    assert panel.result.rows == [pick.token]
    panel.all_button.click()  # every output token again
    qtbot.waitUntil(lambda: len(panel.result.rows) == 4 and not panel.busy(), timeout=30_000)  # d c b <eos>
    assert not panel.pick_label.isVisible()


def test_attention_flow_beside_rollout(qtbot):
    """Flow is a method of the same view: its maps drawn on the rollout map, with the head fusion,
    and the line saying that the cross-attention path is rollout's only."""
    from explorer.analysis.attention_flow import CROSS_NOTE, attention_flow

    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, AttributionPanel, workspace)
    _choose(panel.fusion_box, "max")
    _choose(panel.method_box, "flow")
    qtbot.waitUntil(lambda: isinstance(panel.result, RolloutResult) and panel.result.method == "flow"
                    and not panel.busy(), timeout=60_000)
    assert panel.fusion_box.isEnabled() and panel.map_box.isEnabled() and not panel.contrast_box.isEnabled()
    assert [panel.map_box.itemText(i) for i in range(panel.map_box.count())] == ["encoder", "decoder"]
    source, target = panel.probe_text
    expected = attention_flow(workspace, source, target, "max")
    chosen = expected.maps[panel.map_box.currentIndex()]
    np.testing.assert_allclose(panel.rollout_map.matrix, chosen.matrix.astype(np.float32), atol=1e-6)
    assert CROSS_NOTE in panel.status.text() and "attention flow" in panel.rollout_map.title_text


def test_rnn_rollout_says_why(qtbot):
    panel = open_panel(qtbot, AttributionPanel, char_workspace("seq2seq", "reverse"))
    _choose(panel.method_box, "rollout")
    qtbot.waitUntil(lambda: isinstance(panel.result, RolloutResult) and not panel.busy(), timeout=30_000)
    assert panel.status.text() == RNN_REASON and not panel.has_content()


def test_stop_drops_a_long_computation(qtbot):
    panel = open_panel(qtbot, AttributionPanel, char_workspace("transformer", "reverse"))
    shown = panel.result
    panel.follow_box.setChecked(False)
    panel.steps_box.setValue(2000)
    panel.batch_box.setValue(1)
    panel.compute()
    assert panel.busy() and panel.stop_button.isEnabled()
    panel.stop_button.click()
    qtbot.waitUntil(lambda: not panel.busy(), timeout=30_000)
    assert panel.result is shown and panel.status.text() == "Stopped."


def test_follows_training_live_while_shown(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    panel = window.panels["attribution"]
    window.show()
    window.docks["attribution"].raise_()  # its tab in front: shown, so it asks the training probe
    qtbot.waitUntil(panel.isVisible)
    _choose(panel.method_box, "saliency")
    window.controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=30_000)
    assert window.controller.prober.input.explanation.method == "saliency"
    first = panel.result
    window.controller.train(steps=100_000)
    try:
        qtbot.waitUntil(lambda: panel.result is not first and panel.status.text().startswith("step ")
                        and window.controller.is_training(), timeout=60_000)
    finally:
        window.controller.stop_training()
    assert panel.result.method == "saliency"
    window.docks["attribution"].close()  # the view hidden
    qtbot.waitUntil(lambda: not panel.isVisible())
    assert window.controller.prober.input.explanation is None  # hidden: training pays nothing


@pytest.mark.parametrize("plots", ["attribution,rollout"])
def test_cli_export_renders_attribution_and_rollout(qapp, reverse_checkpoint, tmp_path, capsys, plots):
    out = tmp_path / "out"
    code = main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out), "--input", "abcd",
                 "--target", "dcba", "--plots", plots, "--format", "png,csv"])
    assert code == 0, capsys.readouterr().err
    names = {path.name for path in out.iterdir()}
    assert {"attribution_map.png", "attribution_map.csv", "attribution_completeness.csv",
            "rollout_map.png", "rollout_decoder_to_source.csv"} <= names


def test_ablation_panel_importance_click_undo_and_patching(qtbot, tmp_path):
    from explorer.analysis.interventions import head_importance
    from explorer.ui.panels.ablation import AblationPanel

    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, AblationPanel, workspace)
    source, target = panel.probe_text
    expected = head_importance(workspace, source, target)
    np.testing.assert_allclose(panel.importance.drop, expected.drop, atol=1e-5)
    assert panel.importance_map.row_labels == expected.layers
    panel.chosen = {(0, 0)}
    panel.ablate()
    qtbot.waitUntil(lambda: panel.effect is not None and not panel.busy(), timeout=30_000)
    assert "ablated" in panel.status.text()
    assert panel.effect.clean.sum() - panel.effect.ablated.sum() == pytest.approx(expected.drop[0, 0], abs=1e-4)
    panel.undo()
    assert panel.effect is None and panel.chosen == set()
    panel.corrupted_edit.setText(source[::-1])
    panel.patch()
    qtbot.waitUntil(lambda: panel.patching is not None and not panel.busy(), timeout=30_000)
    assert panel.patching_map.matrix.shape == panel.patching.recovered.shape
    panel.corrupted_edit.setText(source + "ab")
    panel.patch()
    qtbot.waitUntil(lambda: "same length in tokens" in panel.status.text(), timeout=30_000)
    names = {p.name for p in panel.export(tmp_path)}
    assert {"ablation_importance.png", "ablation_importance.csv", "ablation_patching.csv"} <= names


def test_cli_export_renders_ablation(qapp, reverse_checkpoint, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(out), "--input", "abcd",
                 "--target", "dcba", "--plots", "ablation", "--format", "png,svg,csv"])
    assert code == 0, capsys.readouterr().err
    assert {"ablation_importance.png", "ablation_importance.svg", "ablation_importance.csv"} <= {
        p.name for p in out.iterdir()}


def test_ablation_panel_mean_mode(qtbot):
    from explorer.ui.panels.ablation import AblationPanel

    from explorer.analysis.ablation_means import validation_means
    from explorer.analysis.interventions import head_importance

    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, AblationPanel, workspace)
    panel.mode_box.setCurrentIndex(panel.mode_box.findData("mean"))
    qtbot.waitUntil(lambda: panel.importance.mode == "mean" and not panel.busy(), timeout=30_000)
    source, target = panel.probe_text
    expected = head_importance(workspace, source, target, "mean", validation_means(workspace))
    np.testing.assert_allclose(panel.importance.drop, expected.drop, atol=1e-5)  # over the data
    assert "mean over validation data" in panel.importance_map.title_text
    panel.chosen = {(1, 1)}
    panel.ablate()
    qtbot.waitUntil(lambda: panel.effect is not None and not panel.busy(), timeout=30_000)
    drop = panel.effect.clean.sum() - panel.effect.ablated.sum()
    assert drop == pytest.approx(panel.importance.drop[1, 1], abs=1e-4)


def test_ablation_panel_importance_on_validation_loss_with_progress_and_stop(qtbot, monkeypatch):
    from explorer.analysis.head_importance_data import head_importance_on_data
    from explorer.ui.panels import ablation

    monkeypatch.setattr(ablation, "DATA_EXAMPLES", 3)
    workspace = char_workspace("transformer", "reverse")
    panel = open_panel(qtbot, ablation.AblationPanel, workspace)
    seen = []
    panel.progress_changed.connect(seen.append)
    panel.metric_box.setCurrentIndex(panel.metric_box.findData("loss"))
    qtbot.waitUntil(lambda: panel.importance.quantity == "rise in validation loss" and not panel.busy(),
                    timeout=60_000)
    expected = head_importance_on_data(workspace, "loss", 3)
    np.testing.assert_allclose(panel.importance.drop, expected.drop, atol=1e-5)
    assert seen and seen[-1] == 1.0 and panel.mode_box.isEnabled()
    panel.metric_box.setCurrentIndex(panel.metric_box.findData("bleu"))
    assert panel.busy() and panel.stop_button.isEnabled()
    panel.stop_button.click()
    qtbot.waitUntil(lambda: not panel.busy(), timeout=60_000)
    assert panel.status.text() == "Stopped." and panel.importance.quantity == "rise in validation loss"
