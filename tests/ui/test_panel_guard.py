"""A panel whose update raises shows the error in itself; training and the other panels go on."""

from __future__ import annotations

from explorer.ui.panel_guard import FailureBanner, failure_text


def test_a_panel_that_raises_shows_it_and_training_and_other_panels_go_on(
        make_main_window, qtbot, tiny_workspace, monkeypatch, capfd):
    from explorer.ui.panels.curves import TrainingCurvesPanel

    original = TrainingCurvesPanel.add_steps
    broken = {"on": True}

    def add_steps(self, steps):
        if broken["on"]:
            raise ValueError("simulated redraw failure\nwith a second line")
        return original(self, steps)

    monkeypatch.setattr(TrainingCurvesPanel, "add_steps", add_steps)
    window = make_main_window()
    window.show()
    curves, gradients, bleu = (window.panels[name] for name in ("curves", "gradients", "bleu"))
    window.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(window.controller.training_finished, timeout=60_000) as done:
        window.controller.train(steps=12)
    assert done.args[0].reason == "done" and tiny_workspace.step == 12  # training went on
    assert gradients.norms.size == 12  # the other panels kept updating
    assert bleu.history.view()[:, 0].tolist() == [0, 5, 10, 12]  # the first look, then evals
    assert curves.train.size == 0
    assert failure_text(curves) == (
        "⚠ Training curves could not update: ValueError: simulated redraw failure")
    banner = curves.findChild(FailureBanner, "panel_failure")
    assert banner.isVisible() and banner.width() == curves.width()
    assert "add_steps" in banner.toolTip() and "test_panel_guard.py" in banner.toolTip()
    assert failure_text(gradients) == "" and failure_text(bleu) == ""

    broken["on"] = False  # the next update that succeeds clears the message
    with qtbot.waitSignal(window.controller.training_finished, timeout=60_000):
        window.controller.train(steps=2)
    assert failure_text(curves) == "" and not banner.isVisible()
    assert curves.train.view()[:, 0].tolist() == [13, 14]
    assert "Traceback" not in capfd.readouterr().err  # nothing leaked to the terminal
