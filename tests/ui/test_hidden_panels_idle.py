"""Panels out of sight do no drawing while the app trains (issue 22): a dock behind another's tab
stays isVisible() in Qt (it is moved off screen), so the panels ask their visible region. Shown
again, a panel catches up once, with the latest data."""

from __future__ import annotations

import pytest

from explorer.ui.panels.gradients import GradientFlowPanel
from explorer.ui.panels.runs import THIS_WINDOW, RunsPanel

STEPS = 40


@pytest.fixture
def counted(monkeypatch):
    """How often the runs panel redraws its curves and the gradients panel draws a probe."""
    calls = {"runs": 0, "gradients": 0}

    def counting(cls, name, key):
        original = getattr(cls, name)

        def wrapper(self, *args, **kwargs):
            calls[key] += 1
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, wrapper)

    counting(RunsPanel, "redraw", "runs")
    counting(GradientFlowPanel, "_draw_snapshot", "gradients")
    return calls


def test_tabbed_away_panels_draw_nothing_while_training_and_catch_up_when_shown(
        make_main_window, qtbot, tiny_workspace, counted):
    window = make_main_window()
    window.show()
    qtbot.waitExposed(window)
    runs, gradients = window.panels["runs"], window.panels["gradients"]
    # the default layout raises the attention dock over both: off screen, yet isVisible()
    qtbot.waitUntil(lambda: window.panels["attention"].in_sight(), timeout=5_000)
    assert runs.isVisible() and not runs.in_sight() and not gradients.in_sight()

    window.controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: not window.controller.jobs.busy, timeout=30_000)
    probes = []
    window.bus.probe.connect(probes.append)
    counted.update(runs=0, gradients=0)
    with qtbot.waitSignal(window.controller.training_finished, timeout=60_000):
        window.controller.train(steps=STEPS)
    qtbot.waitUntil(lambda: bool(probes) and not window.bus.probing, timeout=30_000)  # the last probe
    # the runs panel's one-second rebuild of "this window" came due, and was held
    qtbot.waitUntil(lambda: bool(runs._held_draws), timeout=5_000)
    assert counted == {"runs": 0, "gradients": 0}
    assert THIS_WINDOW not in runs.entries and gradients._held_draws

    window.docks["runs"].raise_()
    qtbot.waitUntil(lambda: THIS_WINDOW in runs.entries, timeout=5_000)
    assert counted["runs"] >= 1
    steps, _ = runs.entries[THIS_WINDOW].curve.getData()
    assert steps.tolist() == list(range(1, STEPS + 1))

    probes_before = len(probes)
    window.docks["gradients"].raise_()
    qtbot.waitUntil(lambda: counted["gradients"] >= 1 and gradients.snapshot is probes[-1],
                    timeout=10_000)
    # the held probe drawn once, not once per probe it held; a probe that came after the raise
    # (in sight) may draw as it comes
    assert 1 <= counted["gradients"] <= 1 + len(probes) - probes_before
    assert gradients.has_content()
    # (the runs panel, behind the gradients tab again, may hold a row that came after training)
    assert not gradients._held_draws
