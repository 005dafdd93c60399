"""Your own model in the real window: explorer.show (and a second call), `--model FILE.py:build`,
File ▸ Open model code…, and one-line errors for bad code, weights and tokenizers."""

from __future__ import annotations

from pathlib import Path

import torch
from PySide6.QtWidgets import QDialogButtonBox, QLabel, QPlainTextEdit

import explorer
from explorer.ui import show_window
from explorer.ui.dialogs.model_code import ModelCodeDialog, ModelReportDialog
from tests.usermodel import homework_gpt, homework_seq2seq

LOAD_MS = 60_000
HOMEWORK = Path(homework_seq2seq.__file__)


def test_show_opens_the_model_and_a_second_call_updates_the_window(make_main_window, qtbot,
                                                                   monkeypatch):
    monkeypatch.setattr(show_window, "new_window", lambda: make_main_window(create_panels=False))
    monkeypatch.setattr(show_window, "_window", None)
    model, vocab = homework_seq2seq.build()
    model.eval()
    window = explorer.show(model, vocab, source="a b c d", data=[("e f", "f e")], block=False)
    qtbot.waitUntil(lambda: window.controller.workspace is not None, timeout=LOAD_MS)
    panel = window.panels["attention"]
    window.bus.probe_requested.emit("a b c d", "e f g")
    qtbot.waitUntil(lambda: panel.snapshot is not None and panel.snapshot.target == "e f g",
                    timeout=LOAD_MS)
    (cross,) = panel.snapshot.attention
    ids = lambda text: [homework_seq2seq.VOCAB.index(t) for t in text.split()]  # noqa: E731
    src, tgt_in = torch.tensor([ids("a b c d <eos>")]), torch.tensor([ids("<bos> e f g")])
    with torch.no_grad():
        memory, state = model.encoder(model.embed(src))
        decoded, _ = model.decoder(model.embed(tgt_in), state)
        _, weights = model.attention(decoded, memory, memory, average_attn_weights=False)
    assert torch.allclose(torch.from_numpy(cross.weights), weights[0], atol=1e-6)
    # a second call puts another model into the same window
    gpt, chars = homework_gpt.build()
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as changed:
        again = explorer.show(gpt, chars, kind="lm", data=["abc dea"], adapter=explorer.Adapter(
            split="chars"), block=False)
    assert again is window and changed.args[0].model.inner is gpt
    assert window.isVisible()


def test_model_flag_opens_the_file_and_the_dialog_says_it_is_imported(make_main_window, qtbot,
                                                                      tmp_path):
    weights = tmp_path / "homework.pt"
    model, _ = homework_seq2seq.build(seed=3)
    torch.save(model.state_dict(), weights)
    window = make_main_window(create_panels=False)
    window.startup_model = (f"{HOMEWORK}:build", str(weights), None)  # explorer gui --model ...
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as opened:
        window._open_startup()
    workspace = opened.args[0]
    assert workspace.model.config.family == "user-rnn-seq2seq"
    assert torch.equal(workspace.model.inner.embed.weight, model.embed.weight)  # the weights file's

    window.actions.open_model_code.trigger()
    dialog = window.findChild(ModelCodeDialog)
    assert dialog.isVisible()
    assert "import and run" in dialog.findChild(QLabel, "model_code_warning").text()
    open_button = dialog.buttons.button(QDialogButtonBox.StandardButton.Open)
    assert not open_button.isEnabled()  # no file named yet
    dialog.file.setText(str(HOMEWORK))
    assert open_button.isEnabled() and dialog.spec() == (f"{HOMEWORK}:build", None, None)
    open_button.click()  # the report of `explorer check` first; its Open switches the window
    qtbot.waitUntil(lambda: window.findChild(ModelReportDialog) is not None, timeout=LOAD_MS)
    report = window.findChild(ModelReportDialog)
    text = report.findChild(QPlainTextEdit, "model_report_text").toPlainText()
    assert "attention   attention: nn.MultiheadAttention, cross-attention, 2 head(s)" in text
    assert window.controller.workspace is workspace  # not switched yet
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as switched:
        report.buttons.button(QDialogButtonBox.StandardButton.Open).click()
    assert switched.args[0] is not workspace


def test_bad_model_code_is_a_one_line_error_and_the_app_stays_open(make_main_window, qtbot,
                                                                   tmp_path):
    raising = tmp_path / "raising.py"
    raising.write_text("import torch\nraise RuntimeError('homework not finished')\n")
    wrong_tokenizer = tmp_path / "wrong_tokenizer.py"
    wrong_tokenizer.write_text(HOMEWORK.read_text().replace("return Homework(), VOCAB",
                                                            "return Homework(), {'a': 1}"))
    weights = tmp_path / "other.pt"
    torch.save({"embed.weight": torch.zeros(3, 3)}, weights)
    cases = [
        ((f"{raising}:build", None, None), "raised RuntimeError on import: homework not finished"),
        ((f"{HOMEWORK}:make_model", None, None), "has no function 'make_model'"),
        ((f"{HOMEWORK}:build", str(weights), None), "the weights do not fit the model"),
        ((f"{wrong_tokenizer}:build", None, None), "tokenizer: got builtins.dict; accepted: a "
                                                   "Hugging Face tokenizer"),
    ]
    window = make_main_window()
    for spec, expected in cases:
        with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as shown:
            window.controller.open_model_code(*spec)
        message = shown.args[0]
        assert expected in message and "\n" not in message and "Traceback" not in message, message
        window.error_boxes[-1].accept()
        qtbot.waitUntil(lambda: not window.error_boxes)
    assert window.controller.workspace is None  # nothing half-opened
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS):  # and the app goes on
        window.controller.open_model_code(f"{HOMEWORK}:build")
