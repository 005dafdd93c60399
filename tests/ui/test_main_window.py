"""The real main window, driven as a user would: dialogs, files, settings, errors, closing."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDockWidget

from explorer.ui.panels import panel_ids

# The offscreen platform cannot resize windows to their size hints and says so; not a bug of ours.


def test_one_dock_per_panel_named_by_its_id_and_actions_have_shortcuts(make_main_window):
    window = make_main_window()
    for panel_id in panel_ids():
        if panel_id in window.missing_panels:
            continue
        dock = window.findChild(QDockWidget, panel_id)
        assert dock is not None and dock.widget() is window.panels[panel_id]
        assert dock.widget().PANEL_ID == panel_id
    assert set(window.docks) | set(window.missing_panels) == set(panel_ids())
    a = window.actions
    expected = {a.train: "Ctrl+T", a.pause: "Space", a.stop: "Ctrl+.", a.open: "Ctrl+O",
                a.save_checkpoint: "Ctrl+S"}
    for action, keys in expected.items():
        assert action.shortcut() == QKeySequence(keys)
    for action in vars(a).values():
        assert action.toolTip() and action.toolTip() != action.text()
    menus = [action.text().replace("&", "") for action in window.menuBar().actions()]
    assert menus == ["File", "Model", "Train", "View", "Help"]


def test_new_model_dialog_counts_parameters_and_builds_the_model(make_main_window, qtbot):
    import seqmodels

    window = make_main_window()
    window.new_model()
    dialog = window.last_dialog
    for family in ("rnn-lm", "seq2seq", "transformer", "gpt", "bert"):
        dialog.set_family(family)
        config = dialog.model_config()
        assert config.family == family
        expected = seqmodels.count_parameters(seqmodels.build_model(config))
        assert dialog.parameter_count == expected
        assert f"{expected:,}" in dialog.params.text()
    dialog.set_family("seq2seq")
    dialog.setting_widgets["cell"].setCurrentText("ugrnn")
    dialog.setting_widgets["attention"].setCurrentText("cosine")
    dialog.setting_widgets["hidden_size"].setValue(24)
    assert dialog.preset.currentText() == "custom"  # editing a size leaves the preset
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=30_000) as blocker:
        dialog.accept()
    workspace = blocker.args[0]
    config = workspace.model.config
    assert (config.family, config.cell, config.attention, config.hidden_size) == (
        "seq2seq", "ugrnn", "cosine", 24)
    # vocabularies are sized from the data, not from the dialog
    assert config.vocab_size == workspace.tokenizer.vocab_size
    assert workspace.data_spec.kind == "seq2seq"


def test_data_dialog_previews_pairs_tokens_and_vocabulary(make_main_window, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a cat sat\tune chatte\nthe dog\tle chien\n", encoding="utf-8")
    window = make_main_window()
    window.open_path(pairs)
    dialog = window.last_dialog
    assert dialog.preview.rowCount() == 2
    assert dialog.preview.item(1, 1).text() == "le chien"
    assert dialog.tokenizer.currentText() == "word"
    # word vocabulary: 5 reserved ids + {a, cat, sat, the, dog} / {une, chatte, le, chien}
    assert "source 10, target 9" in dialog.vocab.text()
    assert "a │ cat │ sat" in dialog.tokens.text()
    assert dialog.data_spec().tsv == str(pairs)
    dialog.reject()


def test_opening_a_bad_file_shows_an_error_dialog(make_main_window, qtbot, tmp_path):
    bad = tmp_path / "corpus.txt"
    bad.write_bytes(b"hello\n\x00\x01binary")
    window = make_main_window()
    with qtbot.waitSignal(window.error_shown) as blocker:
        window.open_path(bad)
    assert "binary" in blocker.args[0] and "corpus.txt:2" in blocker.args[0]
    box = window.error_boxes[-1]
    assert box.isVisible() and box.text() == blocker.args[0]
    box.accept()
    qtbot.waitUntil(lambda: not window.error_boxes)
    with qtbot.waitSignal(window.error_shown) as blocker:
        window.open_path(tmp_path)  # a folder without config.json is no checkpoint
    assert "not a checkpoint" in blocker.args[0]


def test_layout_and_recent_files_survive_a_restart(make_main_window, tmp_path):
    window = make_main_window()
    window.show()
    window.docks["bleu"].hide()
    window.add_recent(tmp_path / "a.txt")
    window.add_recent(tmp_path / "b.txt")
    window.close()
    again = make_main_window()
    again.show()
    assert not again.docks["bleu"].isVisible()
    assert again.docks["curves"].isVisible()
    assert again.recent_files() == [str(tmp_path / "b.txt"), str(tmp_path / "a.txt")]
    again.reset_layout()
    assert again.docks["bleu"].isVisible()


def test_checkpoint_saved_then_dropped_on_the_window_reopens(
    make_main_window, qtbot, tiny_workspace, tmp_path
):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(window.controller.training_finished, timeout=30_000):
        window.controller.train(steps=3)
    saved = window.save_checkpoint(tmp_path / "ckpt")
    assert saved is not None and (saved / "config.json").is_file()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(saved))])
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                      Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=30_000) as blocker:
        window.dropEvent(drop)
    loaded = blocker.args[0]
    assert loaded is not tiny_workspace and loaded.step == 3 and loaded.family == "seq2seq"
    assert window.panels["curves"].train.size == 3  # the history came back with the checkpoint
    assert window.recent_files()[0] == str(saved.resolve())

    # Train ▸ Resume from checkpoint: load it again and go on training from step 3
    with qtbot.waitSignal(window.controller.training_finished, timeout=30_000) as finished:
        window.controller.resume_from(saved, steps=2)
    resumed = window.controller.workspace
    assert finished.args[0].reason == "done"
    assert resumed is not loaded and resumed.step == 5
    assert [row["step"] for row in resumed.history] == [1, 2, 3, 4, 5]


def test_the_window_paints_before_torch_superqt_or_pyqtgraph_load():
    """What the first paint waits for: the window's own module and what it imports. torch,
    superqt (all its widgets, ~0.3 s) and pyqtgraph load after it, with the panels."""
    import subprocess
    import sys

    code = (
        "import sys; import explorer.ui.main_window\n"
        "print(sorted(m for m in ('torch', 'superqt', 'qtpy', 'pyqtgraph') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_app_trains_with_a_core_left_to_its_window(make_main_window, qtbot, tiny_workspace, monkeypatch):
    """On an idle 2-core machine the app's default is 1 torch thread (headless: torch's 2): with
    2, the window's paints stalled torch's threads (0.36-0.63 of headless, against 0.80-0.85)."""
    import torch

    from explorer import runtime

    monkeypatch.setattr(runtime, "torch_default_threads", lambda: 2)
    monkeypatch.setattr(runtime, "usable_cores", lambda: 2)
    monkeypatch.setattr(runtime.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    applied, real = [], torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (applied.append(n), real(n)))
    window = make_main_window()
    window.controller.set_workspace(tiny_workspace)
    with qtbot.waitSignal(window.controller.training_finished, timeout=30_000):
        window.controller.train(steps=2)
    assert applied[0] == 1
    assert runtime.choose_threads().threads == 2  # headless, the same machine: torch's default
