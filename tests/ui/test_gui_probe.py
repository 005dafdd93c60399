"""`explorer gui --probe TEXT --probe-target TEXT`: the first model the window opens is probed
on that input, not on its first validation example."""

from __future__ import annotations


def test_the_window_probes_what_gui_probe_names(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    window.startup_probe = ("c b a", "a b c")
    window.startup_model = tiny_workspace
    window._open_startup()
    qtbot.waitUntil(lambda: window.controller.workspace is tiny_workspace, timeout=30_000)
    assert window.bus.state.probe.text == ("c b a", "a b c")
    assert window.panels["attention"].source_edit.text() == "c b a"
