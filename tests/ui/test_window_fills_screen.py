"""The first window fills the screen's available area (no black borders at 1920 x 1080 without a
window manager), a saved geometry replaces it, and the attention heatmap keeps the height its
rows need: the decoding tab group below it no longer holds the height its compare cards want."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect

from explorer.training.checkpoint import demo_checkpoints
from explorer.ui import dock_layout
from explorer.ui.main_window import MainWindow
from explorer.ui.panels.attention import ROW_PX, heatmap_height


class _Screen:
    """A 1920 x 1080 monitor (the offscreen platform's own screen is 800 x 600)."""

    def __init__(self, rect: QRect) -> None:
        self.rect = rect

    def availableGeometry(self) -> QRect:
        return QRect(self.rect)


@pytest.fixture
def full_hd(monkeypatch):
    monkeypatch.setattr(MainWindow, "screen", lambda self: _Screen(QRect(0, 0, 1920, 1080)))


def test_the_first_window_takes_the_screen_and_a_saved_one_its_own_size(
        make_main_window, full_hd, isolated_settings):
    window = make_main_window(create_panels=False)
    assert (window.width(), window.height()) == (1920, 1080)
    window.resize(720, 560)  # within the offscreen screen, which restoreGeometry fits it to
    window.save_settings()
    again = make_main_window(create_panels=False)
    assert (again.width(), again.height()) == (720, 560)


def test_the_heatmap_keeps_the_height_of_its_rows_at_1920x1080(
        make_main_window, qtbot, monkeypatch, full_hd):
    demo = next(path for name, path in demo_checkpoints().items() if "transformer" in name)
    monkeypatch.setattr(dock_layout, "TALL_SCREEN_PX", 0)  # the two-row columns of a tall screen
    window = make_main_window(create_panels=False)
    window.show()
    qtbot.waitExposed(window)
    window.create_panels()
    window.controller.open_checkpoint(demo)
    panel = window.panels["attention"]
    qtbot.waitUntil(lambda: window.controller.workspace is not None
                    and not window.controller.jobs.busy, timeout=120_000)
    words = "the old dogs watch some happy mice behind the forest".split()
    target = " ".join(["forest-SG", "behind", "dog-PL", "old-PL", "mouse-PL", "happy-PL"] * 3)
    window.bus.state.set_probe_input(" ".join(words * 2), target)
    qtbot.waitUntil(lambda: panel.current_map() is not None
                    and len(panel.current_map().rows) >= 18, timeout=120_000)
    qtbot.waitUntil(lambda: panel.heatmap.height() >= heatmap_height(len(panel.current_map().rows)),
                    timeout=30_000)
    rows = len(panel.current_map().rows)
    assert panel.heatmap.height() >= heatmap_height(rows) >= 18 * ROW_PX
    # the tree below still has room to draw in
    assert window.panels["beam"].height() >= 300


def test_a_window_that_filled_its_screen_fills_it_again(make_main_window, full_hd):
    """Not restoreGeometry's guess: without a window manager it took a frame it never had off the
    window (1278 x 774 at (1, 25) on a 1280 x 800 screen)."""
    window = make_main_window(create_panels=False)
    window.save_settings()
    assert str(window.settings.value("layout/1920x1080/fills_screen")).lower() == "true"
    again = make_main_window(create_panels=False)
    assert (again.x(), again.y(), again.width(), again.height()) == (0, 0, 1920, 1080)
