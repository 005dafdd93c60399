"""Small things a newcomer meets: the progress bar after Stop, the Data dialog's task, and a
toolbar of icons whose tooltips name the actions."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton


def test_progress_resets_when_training_stops(make_main_window, qtbot, tiny_workspace):
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    window.controller.train(steps=100_000)
    qtbot.waitUntil(lambda: window.status.progress.value() > 0 and window.status.progress.maximum() == 100_000,
                    timeout=30_000)
    assert window.status.progress.isTextVisible() and not window.status.progress.isHidden()
    window.controller.stop_training()
    qtbot.waitUntil(lambda: window.controller.state == "stopped")
    assert window.status.progress.value() == 0 and not window.status.progress.isTextVisible()
    assert window.status.progress.isHidden()  # idle: no empty bar that reads as a text box
    # a throttled update that lands after Stop does not bring the old percentage back
    from explorer.events import StepMetrics

    late = StepMetrics(step=50, loss=1.0, lr=1e-3, grad_norm=1.0, grad_norm_clipped=1.0,
                       tokens=10, tokens_per_s=100.0, elapsed_s=1.0, total_steps=100_000)
    window.status.show_stats(late)
    assert window.status.progress.value() == 0 and window.status.step_label.text() == "step: 50"


def test_data_dialog_opens_on_the_current_task(make_main_window, tiny_workspace):
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    assert tiny_workspace.task == "reverse"  # not the list's first task, "copy"
    window.data_dialog()
    dialog = window.last_dialog
    assert dialog.task.currentText() == "reverse" and dialog.use_task.isChecked()
    assert dialog.data_spec().task == "reverse"
    dialog.reject()


def test_toolbar_shows_icons_and_names_them_in_tooltips(make_main_window):
    window = make_main_window(create_panels=False)
    toolbar = window.toolbar
    assert toolbar.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly
    actions = [a for a in toolbar.actions() if not a.isSeparator()]
    assert len(actions) == 8
    for action in actions:
        assert not action.icon().isNull(), action.text()
        name = action.text().replace("&", "").rstrip("…")
        assert action.toolTip().startswith(name), action.toolTip()
        button = toolbar.widgetForAction(action)
        assert isinstance(button, QToolButton) and button.toolTip() == action.toolTip()
    assert window.actions.train.toolTip().startswith("Train (Ctrl+T): ")


def test_the_controls_show_the_config_without_echoing_it_back(make_main_window, tiny_workspace):
    import dataclasses

    window = make_main_window(create_panels=False)
    tiny_workspace.train_config = dataclasses.replace(tiny_workspace.train_config, clip=None,
                                                      lr=0.02, seed=7)
    announced = []
    window.bus.train_config_changed.connect(announced.append)
    window.controller.set_workspace(tiny_workspace)
    assert announced == [tiny_workspace.train_config]  # the controller's alone: no echo
    controls = window.controls
    assert not controls.clip_enabled.isChecked() and not controls.clip.isEnabled()
    assert controls.lr.value() == 0.02 and controls.seed.value() == 7
    controls.clip_enabled.setChecked(True)  # the user turns clipping on
    assert controls.clip.isEnabled() and window.controller.train_config.clip == controls.clip.value()
