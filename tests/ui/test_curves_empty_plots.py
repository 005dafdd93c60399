"""A model with evaluations but no recorded steps (explorer.show, a model just built on new data)
draws its loss and says in the lr and ‖g‖ plots why they are empty, with no axes of an old
range; its first steps bring the axes back."""

from __future__ import annotations

from explorer.events import StepMetrics


def _steps(first: int, last: int) -> list[StepMetrics]:
    return [StepMetrics(step=s, loss=2.0, lr=1e-3, grad_norm=1.5, grad_norm_clipped=1.0,
                        tokens=10, tokens_per_s=100.0, elapsed_s=0.1) for s in range(first, last)]


def test_lr_and_grad_plots_say_why_they_are_empty_and_forget_the_old_range(
        make_main_window, qtbot, tiny_workspace, tiny_task_spec):
    from explorer.training.setup import build_workspace

    window = make_main_window()
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    window.show_panel("curves")
    panel = window.panels["curves"]
    window.controller.set_workspace(tiny_workspace)
    qtbot.waitUntil(lambda: panel.evals.size > 0 and not window.controller.jobs.busy,
                    timeout=120_000)
    panel.redraw(force=True)
    lr, grad = panel.plots["lr"], panel.plots["grad_norm"]
    for name, plot in (("lr", lr), ("grad_norm", grad)):
        message = panel.plot_messages[name].message
        assert message.startswith("No steps yet: Train") and "\n" not in message, name
        assert not plot.getAxis("bottom").isVisible() and not plot.getAxis("left").isVisible()
        assert name not in panel.plot_items()  # an export leaves the empty plot out
    assert not panel.tau_line.isVisible()  # no clipping threshold over no norms
    assert panel.plot_messages["accuracy"].message == ""  # the evaluation drew its point
    assert panel.plots["loss"].getAxis("bottom").isVisible()

    # 800 steps drawn, then a fresh model at step 0: none of the old range is left on show
    panel.add_steps(_steps(1, 801))
    panel.redraw(force=True)
    assert not panel.plot_messages["lr"].message and lr.getAxis("bottom").isVisible()
    assert panel.tau_line.isVisible() == (panel.clip is not None)
    assert lr.getViewBox().viewRange()[0][1] >= 800
    fresh = build_workspace(tiny_task_spec, "seq2seq", preset="tiny", cell="gru",
                            attention="dot", embed_dim=16, hidden_size=16)
    window.controller.set_workspace(fresh)
    qtbot.waitUntil(lambda: panel.evals.size > 0 and not window.controller.jobs.busy,
                    timeout=120_000)
    panel.redraw(force=True)
    for name, plot in (("lr", lr), ("grad_norm", grad)):
        assert panel.plot_messages[name].message, name
        assert not plot.getAxis("bottom").isVisible(), name
    panel.add_steps(_steps(1, 3))
    panel.redraw(force=True)
    assert lr.getAxis("bottom").isVisible() and not panel.plot_messages["grad_norm"].message
