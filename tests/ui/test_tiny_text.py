"""Opening a 2-line text over a trained model: the data dialog says what the text is enough for
and offers the batch size and context that fit it, the trained model is replaced only once the
user says so, the fitted settings train, and a text too short for the settings in use is named
by the Training dock's fields, not the CLI's flags."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

LINES = ["hello there", "how are you today"]


def _train(window, qtbot, steps: int) -> None:
    start = window.controller.workspace.step
    with qtbot.waitSignal(window.controller.training_finished, timeout=120_000) as blocker:
        window.controller.train(steps=steps)
    assert blocker.args[0].reason == "done", blocker.args[0]
    assert window.controller.workspace.step == start + steps


def test_a_tiny_text_is_fitted_and_a_trained_model_replaced_only_when_asked(
        make_main_window, qtbot, tiny_workspace, tmp_path):
    from explorer.training.feeds import make_feed

    text = tmp_path / "tiny.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    window = make_main_window()
    window.show()
    qtbot.waitExposed(window)
    window.controller.set_workspace(tiny_workspace)
    # nor the trained model's BLEU breakdown: a language model has no BLEU
    assert window.panels["bleu"].details.isHidden() and window.panels["bleu"].breakdown is None
    # nor the trained model's attention map
    attention = window.panels["attention"]
    assert attention.view.empty and not attention.heatmap.isVisible()
    qtbot.waitUntil(lambda: not window.controller.jobs.busy, timeout=60_000)
    _train(window, qtbot, 2)
    trained = window.controller.workspace

    window.open_path(text)
    dialog = window.last_dialog
    # the last line is held out for validation: the first line's characters and its <eos> train
    tokens = len(LINES[0]) + 1
    assert dialog.fit_note.isVisible()
    assert dialog.fit_note.text().endswith(
        f"{tokens} training tokens: too few for the Training dock's batch size 32 and context "
        "64.</span>")
    # a new text trains an RNN LM (the seq2seq model cannot read it): one row of every token
    # but the last, which is the last chunk's next token
    assert dialog.fitted_settings() == {"batch_size": 1, "context": tokens - 1}
    assert dialog.fit_box.isVisible() and dialog.fit_box.isChecked()
    dialog.accept()

    box = window.last_dialog
    assert isinstance(box, QMessageBox) and "step 2" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.wait(200)
    assert window.controller.workspace is trained and not window.controller.jobs.busy

    window.open_path(text)
    window.last_dialog.accept()
    box = window.last_dialog
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=60_000) as blocker:
        box.button(QMessageBox.StandardButton.Yes).click()
    fresh = blocker.args[0]
    assert fresh is not trained and fresh.step == 0 and fresh.family == "rnn-lm"
    config = window.controller.train_config
    assert (config.batch_size, config.context) == (1, tokens - 1)
    controls = window.controls
    assert (controls.batch_size.value(), controls.context.value()) == (1, tokens - 1)
    # the feed itself takes them: one row of `context` tokens
    assert tuple(make_feed(fresh, config).train_batch(1).tokens.shape) == (1, tokens - 1)
    # no plot keeps the trained model's range: the step plots say they have nothing yet
    curves = window.panels["curves"]
    curves.redraw(force=True)
    assert curves.plot_messages["lr"].message and curves.plot_messages["grad_norm"].message
    # nor the trained model's BLEU breakdown: a language model has no BLEU
    assert window.panels["bleu"].details.isHidden() and window.panels["bleu"].breakdown is None
    # nor the trained model's attention map
    attention = window.panels["attention"]
    assert attention.view.empty and not attention.heatmap.isVisible()
    qtbot.waitUntil(lambda: not window.controller.jobs.busy, timeout=60_000)
    _train(window, qtbot, 2)

    # settings the text cannot fill: the app names its own fields
    window.controller.update_train_config(batch_size=32, context=64)
    with qtbot.waitSignal(window.error_shown, timeout=60_000) as blocker:
        window.controller.train(steps=2)
    message = blocker.args[0]
    assert f"the training text has {tokens} tokens: too few for 32 rows of 64 tokens" in message
    assert "Training dock's “batch size” or “context”" in message and "--" not in message
    for box in list(window.error_boxes):
        box.accept()
    qtbot.waitUntil(lambda: not window.controller.is_training(), timeout=60_000)


def test_the_cli_still_names_its_flags(tmp_path, capsys):
    from explorer.cli import main

    text = tmp_path / "tiny.txt"
    text.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    code = main(["train", "--data", str(text), "--arch", "rnn-lm", "--steps", "1",
                 "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    assert "(use a smaller --batch-size or --context)" in err
