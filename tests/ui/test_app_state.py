"""The app state (explorer/state.py) is the one place the workspace and the probe input live:
every panel of the real window reads them there, and a change of the state reaches each one."""

from __future__ import annotations

from PySide6.QtCore import QObject

from explorer.panel_registry import PANELS

# the panels that show the probe input in a text box of their own, and that box
FOLLOWERS = {"attention": "source_edit", "hidden": "source_edit", "beam": "source_box",
             "step": "source_box"}


def copies_in(panel, workspace, probe_text) -> list[str]:
    """Attributes of the panel or of any QObject inside it that hold the workspace or the probe
    input themselves (deep copies the panel's workers decode on are other objects)."""
    found = []
    for holder in (panel, *panel.findChildren(QObject)):
        for name, value in getattr(holder, "__dict__", {}).items():
            if value is workspace or (isinstance(value, tuple) and value == probe_text):
                found.append(f"{type(holder).__name__}.{name}")
    return found


def test_no_panel_keeps_its_own_workspace_or_probe_input(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    state = window.bus.state
    window.controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: not window.bus.probing, timeout=60_000)
    assert set(window.panels) == {entry.panel_id for entry in PANELS}

    state.set_probe_input("abcd", "dcba")  # as an Examples row or the probe box would
    qtbot.waitUntil(lambda: not window.bus.probing, timeout=60_000)
    for panel_id, panel in window.panels.items():
        assert copies_in(panel, tiny_workspace, ("abcd", "dcba")) == [], panel_id
        assert panel.workspace is tiny_workspace and panel.probe_text == ("abcd", "dcba"), panel_id
    for panel_id, box in FOLLOWERS.items():  # the change event reached them
        assert getattr(window.panels[panel_id], box).text() == "abcd", panel_id

    window.controller.set_workspace(None)  # the state's change reaches every panel again
    for panel_id, panel in window.panels.items():
        assert panel.workspace is None and panel.probe_text == ("", ""), panel_id
