"""The lesson dock opens a lesson (its model, its panels, its steps) and checks a step on the
model; presentation mode scales a panel up and gives the layout back exactly."""

from __future__ import annotations

from explorer.lessons.format import builtin_lessons


def test_presentation_round_trips_the_layout_and_scales_the_panel(make_main_window, qtbot):
    from PySide6.QtWidgets import QApplication

    window = make_main_window()
    window.resize(1280, 800)  # the smallest screen the default layout is made for
    window.show()
    qtbot.waitExposed(window)
    for _ in range(20):  # the first show lays the docks out over a few event-loop turns
        QApplication.processEvents()
    before = window.saveState()
    font = QApplication.instance().font().pointSizeF()
    plot = window.panels["gradients"].plot_items()["playground"]
    tick = plot.getAxis("left").style["tickFont"]
    tick_before = tick.pointSizeF() if tick is not None else None

    window.presentation.enter("gradients")
    assert window.presentation.screen.isAncestorOf(window.panels["gradients"])
    panel = window.panels["gradients"]
    assert panel.font().pointSizeF() == 2 * font
    assert plot.getAxis("left").style["tickFont"].pointSizeF() >= 16
    window.presentation.set_zoom(+1)
    assert window.presentation.zoom["gradients"] == 2.5
    window.actions.presentation.trigger()  # F11 again: back

    assert not window.presentation.on
    assert window.saveState() == before
    assert panel.font().pointSizeF() == font
    after = plot.getAxis("left").style["tickFont"]
    assert (after.pointSizeF() if after is not None else None) == tick_before
    window.presentation.enter("gradients")  # the zoom is kept per panel
    assert panel.font().pointSizeF() == 2.5 * font
    window.presentation.leave()
    assert window.saveState() == before


def test_lesson_dock_opens_a_lesson_arranges_its_panels_and_checks_a_step(make_main_window, qtbot,
                                                                          tmp_path):
    window = make_main_window()
    window.show()
    lesson = next(p for p in builtin_lessons() if p.stem.startswith("06"))
    window.open_lesson(lesson)
    dock = window.lesson_dock
    qtbot.waitUntil(lambda: dock.do_button.isEnabled(), timeout=60_000)
    assert window.controller.workspace is dock.session.workspace
    assert window.docks["positional"].isVisible() and not window.docks["beam"].isVisible()
    assert "1/2" in dock.title.text()
    dock.do_button.click()
    qtbot.waitUntil(lambda: 0 in dock.results, timeout=60_000)
    assert all(r.passed for r in dock.results[0])
    assert dock.checks.item(0).text().startswith("✓")
    dock.next_button.click()
    assert "2/2" in dock.title.text() and not dock.next_button.isEnabled()
    qtbot.waitUntil(lambda: window.panels["positional"].has_content(), timeout=60_000)
    written = dock.export_handout(tmp_path)
    assert (tmp_path / "handout.html") in written
    assert list((tmp_path / "step-01").glob("*.png"))
