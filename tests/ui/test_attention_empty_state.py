"""With no model the attention panel says why in one line and draws no axes (they read −1 to 0);
the heatmap appears with the first map."""

from __future__ import annotations


def test_no_model_no_axes_then_the_heatmap(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    window.show()
    qtbot.waitExposed(window)
    panel = window.panels["attention"]
    assert panel.status.text() == "Open or create a model with attention."
    assert panel.stack.isHidden() and not panel.has_content()
    window.controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(panel.has_content, timeout=60_000)
    assert not panel.stack.isHidden()
