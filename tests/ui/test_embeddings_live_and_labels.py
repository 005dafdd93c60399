"""The embeddings panel follows training live (from the trainer's probes, throttled) and never
draws two token labels over each other."""

import numpy as np
import pytest
from PySide6.QtCore import QRectF

from explorer.analysis.embeddings import embedding_matrix, pca_2d
from explorer.ui.panels.embeddings import EmbeddingsPanel
from tests.ui.test_inside_panels import char_workspace, open_panel


def overlapping(rects: list[QRectF]) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(rects)) for j in range(i + 1, len(rects))
            if rects[i].intersects(rects[j])]


def settle(qtbot, panel, size):
    """Resize and let the layout and the view's range settle, then place the labels."""
    panel.resize(*size)
    view = panel.plot.getViewBox()
    qtbot.waitUntil(lambda: view.width() > 0 and view.width() < size[0])
    ranges = []

    def still() -> bool:  # the same range twice in a row, no redraw pending
        ranges.append(view.viewRange())
        return len(ranges) > 1 and ranges[-1] == ranges[-2] and not panel.label_timer.isActive()

    qtbot.waitUntil(still)
    panel.update_view()


@pytest.mark.parametrize("size", [(900, 700), (420, 300)])
def test_labels_of_a_small_vocabulary_do_not_overlap(qtbot, size):
    ws = char_workspace("transformer", "dates")
    panel = open_panel(qtbot, EmbeddingsPanel, ws)
    settle(qtbot, panel, size)
    candidates = panel.labelled_ids()
    assert len(candidates) == len(panel.data.tokens)  # every token is in view and a candidate
    drawn = panel.drawn_label_rects()
    assert 0 < len(drawn) <= len(candidates)
    assert overlapping([rect for _, rect in drawn]) == []
    # what is drawn is where pyqtgraph puts each label (once painted): bottom left on its point
    panel.plot_widget.viewport().repaint()
    for label in (l for l in panel.labels if l.isVisible()):
        assert label.textItem.sceneBoundingRect().toRect() == panel.label_rect(label).toRect()
    # the marked tokens (a selection and its neighbours) are placed first
    index = panel.data.token_id("3")
    panel.select_token(index)
    assert "3" in [token for token, _ in panel.drawn_label_rects()]
    assert overlapping([rect for _, rect in panel.drawn_label_rects()]) == []


def relative_luminance(colour) -> float:
    """WCAG 2's relative luminance of a QColor."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(
        colour.blueF())


def test_token_labels_read_against_the_plot_background(qtbot):
    """WCAG's 4.5:1 for text (pyqtgraph's default label grey on white was 1.7:1)."""
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    panel = open_panel(qtbot, EmbeddingsPanel, char_workspace("transformer", "dates"))
    # the app's plots are drawn on the palette's Base colour (explorer.ui.app.apply_theme)
    background = QApplication.palette().color(QPalette.ColorRole.Base)
    lighter, darker = sorted((relative_luminance(background), relative_luminance(
        panel.labels[0].textItem.defaultTextColor())), reverse=True)
    assert (lighter + 0.05) / (darker + 0.05) >= 4.5


def test_zooming_in_brings_back_the_labels_that_did_not_fit(qtbot):
    ws = char_workspace("transformer", "dates")
    panel = open_panel(qtbot, EmbeddingsPanel, ws)
    settle(qtbot, panel, (420, 300))
    before = len(panel.drawn_label_rects())
    coords = panel.data.projection.coords
    (x0, x1), (y0, y1) = panel.plot.getViewBox().viewRange()
    panel.plot.getViewBox().setRange(xRange=(x0, (x0 + x1) / 2), yRange=(y0, (y0 + y1) / 2), padding=0)
    panel.update_view()
    (x0, x1), (y0, y1) = panel.plot.getViewBox().viewRange()
    in_view = ((coords[:, 0] >= x0) & (coords[:, 0] <= x1) & (coords[:, 1] >= y0) & (coords[:, 1] <= y1)).sum()
    drawn = panel.drawn_label_rects()
    assert overlapping([rect for _, rect in drawn]) == []
    assert len(drawn) <= in_view and before > 0


def test_the_projection_follows_training_live(make_main_window, qtbot, tiny_workspace):
    """During a training run in the window the trainer's probes carry the embeddings, and the
    panel re-projects them (throttled) before the run ends."""
    window = make_main_window()
    panel = window.panels["embeddings"]
    window.controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: panel.has_content() and not panel.busy(), timeout=30_000)
    first = panel.data
    np.testing.assert_array_equal(first.matrix, embedding_matrix(tiny_workspace.model, first.which))
    tiny_workspace.train_config.lr = 3e-2
    window.controller.train(steps=100_000)
    try:
        qtbot.waitUntil(lambda: panel.data is not first and not np.array_equal(
            panel.data.projection.coords, first.projection.coords), timeout=30_000)
        assert window.controller.is_training()  # live, not the run's end
    finally:
        window.controller.stop_training()
    live = panel.data
    assert live.which == first.which and live.tokens is first.tokens  # same vocabulary, kept
    assert not np.array_equal(live.matrix, first.matrix)  # the weights moved
    np.testing.assert_allclose(live.projection.coords, pca_2d(live.matrix).coords, atol=1e-5)
    assert f"{len(live.tokens):,} tokens" in panel.status.text()


def test_live_projections_are_throttled_latest_wins_and_skip_unchanged_weights(qtbot):
    from explorer.events import ProbeSnapshot
    from explorer.ui.panels import embeddings as panel_module

    ws = char_workspace("gpt", "dates")
    panel = open_panel(qtbot, EmbeddingsPanel, ws)
    first = panel.data

    def probe(matrix, step):
        return ProbeSnapshot(step=step, source="", target="",
                             live={"embeddings": {"input": matrix, "output": matrix}})

    same = probe(first.matrix.copy(), 1)  # the weights did not move: nothing is redrawn
    panel.bus.probe.emit(same)
    qtbot.waitUntil(lambda: not panel.live_timer.isActive() and not panel.busy())
    assert panel.data is first
    panel.bus.set_workspace(ws)  # the same model again (its projection is of the live copy)
    qtbot.waitUntil(lambda: not panel.busy() and panel.status.text() == panel.summary(first))
    assert panel.data is first
    a, b = first.matrix + 0.1, first.matrix * 2.0
    panel.bus.probe.emit(probe(a, 2))
    panel.bus.probe.emit(probe(b, 3))  # before the panel got round to the first: only b is projected
    qtbot.waitUntil(lambda: panel.data is not first and not panel.busy())
    np.testing.assert_array_equal(panel.data.matrix, b)
    np.testing.assert_allclose(panel.data.projection.coords, pca_2d(b).coords, atol=1e-5)
    projected = panel.data
    c = first.matrix * 3.0
    panel.bus.probe.emit(probe(c, 4))
    assert panel.live_timer.isActive()  # waits out LIVE_EVERY_S since the last projection
    assert panel.live_timer.remainingTime() <= 1000 * panel_module.LIVE_EVERY_S
    qtbot.waitUntil(lambda: panel.data is not projected and not panel.busy(), timeout=10_000)
    np.testing.assert_array_equal(panel.data.matrix, c)
