"""Hugging Face models in the real window: every way to open one (Ctrl+O, File ▸ Open checkpoint,
drag-and-drop, recent files, a model id in the local cache), one-line errors for bad folders,
fine-tuning with the app's trainer and saving back as an HF folder, and new models with an HF
architecture from the new-model dialog."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
from PySide6.QtCore import QPointF, Qt  # noqa: E402
from PySide6.QtGui import QKeySequence  # noqa: E402
from PySide6.QtWidgets import QFileDialog  # noqa: E402

from tests.hf.builders import CORPUS  # noqa: E402
from tests.hf.conftest import hf_models  # noqa: E402,F401 - the tiny model folders

LOAD_MS = 60_000


def opened(window, qtbot, action):
    """The workspace the window shows after `action()` (which opens something)."""
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as blocker:
        action()
    return blocker.args[0]


def test_ctrl_o_and_open_checkpoint_open_hf_folders(make_main_window, qtbot, hf_models, monkeypatch):
    window = make_main_window()
    assert window.actions.open.shortcut() == QKeySequence("Ctrl+O")
    # Ctrl+O's file dialog picks files: the folder's config.json opens the model
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        lambda *args, **kwargs: (str(hf_models("gpt2") / "config.json"), ""))
    assert opened(window, qtbot, window.actions.open.trigger).family == "hf-causal-lm"
    # File ▸ Open checkpoint (Ctrl+Shift+O) picks the folder itself
    monkeypatch.setattr(QFileDialog, "getExistingDirectory",
                        lambda *args, **kwargs: str(hf_models("marian")))
    workspace = opened(window, qtbot, window.actions.open_checkpoint.trigger)
    assert workspace.family == "hf-seq2seq" and workspace.model.config.model_type == "marian"
    assert window.recent_files()[:2] == [str(hf_models("marian").resolve()),
                                         str(hf_models("gpt2").resolve())]


def test_a_dropped_hf_folder_opens_and_recent_files_reopen_it(make_main_window, qtbot, hf_models):
    from PySide6.QtCore import QMimeData, QUrl
    from PySide6.QtGui import QDropEvent

    window = make_main_window()
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(hf_models("bert")))])
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                      Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    assert opened(window, qtbot, lambda: window.dropEvent(drop)).family == "hf-masked-lm"
    window.add_recent(hf_models("t5"))
    window.fill_recent_menu()
    entries = {action.text(): action for action in window.recent_menu.actions()}
    assert list(entries) == [str(hf_models("t5").resolve()), str(hf_models("bert").resolve())]
    reopened = opened(window, qtbot, entries[str(hf_models("bert").resolve())].trigger)
    assert reopened.family == "hf-masked-lm" and window.recent_files()[0] == str(
        hf_models("bert").resolve())


def test_a_model_id_in_the_local_cache_opens_offline(make_main_window, qtbot, hf_models, tmp_path,
                                                     monkeypatch):
    snapshot = tmp_path / "hf" / "hub" / "models--tiny--gpt2" / "snapshots" / "0123abc"
    shutil.copytree(hf_models("gpt2"), snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("0123abc")
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    window = make_main_window()
    workspace = opened(window, qtbot, lambda: window.open_path("tiny/gpt2"))
    assert workspace.family == "hf-causal-lm" and workspace.model.config.path == str(snapshot)
    assert window.recent_files()[0] == "tiny/gpt2"  # kept as an id, not as a path
    window.fill_recent_menu()
    entry = next(a for a in window.recent_menu.actions() if a.text() == "tiny/gpt2")
    assert opened(window, qtbot, entry.trigger).family == "hf-causal-lm"


def broken_copies(source, root):
    """Folders that look like HF models but cannot be opened, and what the error must say."""
    remote = shutil.copytree(source, root / "remote")
    config = json.loads((remote / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilModel"}
    (remote / "config.json").write_text(json.dumps(config))
    no_tokenizer = shutil.copytree(source, root / "no-tokenizer")
    for name in ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json"):
        (no_tokenizer / name).unlink(missing_ok=True)
    not_a_model = root / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "config.json").write_text(json.dumps({"hello": "world"}))
    unknown = shutil.copytree(source, root / "unknown-type")
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "flux-capacitor",
                                                     "auto_map": None}))
    return [(remote, "trust_remote_code"), (no_tokenizer, "tokenizer"),
            (not_a_model, "not a Sequence Model Explorer checkpoint"), (unknown, "flux-capacitor")]


def test_bad_hf_folders_are_one_line_error_dialogs(make_main_window, qtbot, hf_models, tmp_path):
    window = make_main_window()
    for folder, expected in broken_copies(hf_models("gpt2"), tmp_path):
        with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as blocker:
            window.open_path(folder)
        message = blocker.args[0]
        assert expected in message and "\n" not in message and "Traceback" not in message, message
        box = window.error_boxes[-1]
        assert box.isVisible() and box.text() == message
        box.accept()
        qtbot.waitUntil(lambda: not window.error_boxes)
    assert window.controller.workspace is None  # nothing half-opened


def pairs_file(path):
    path.write_text("\n".join(f"{s}\t{' '.join(reversed(s.split()))}"
                              for s in dict.fromkeys(CORPUS)) * 4 + "\n", encoding="utf-8")
    return path


def train_in_the_app(window, qtbot, steps):
    with qtbot.waitSignal(window.controller.training_finished, timeout=LOAD_MS) as finished:
        window.controller.train(steps=steps)
    assert finished.args[0].reason == "done"
    return window.controller.workspace


@pytest.mark.parametrize("name", ["marian", "gpt2"])
def test_open_then_train_fine_tunes_the_hf_model_and_saves_an_hf_folder(
    make_main_window, qtbot, hf_models, tmp_path, name
):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from explorer.training import DataSpec

    window = make_main_window()
    model = opened(window, qtbot, lambda: window.open_path(hf_models(name))).model
    if name == "marian":
        spec = DataSpec(tsv=str(pairs_file(tmp_path / "pairs.tsv")))
    else:
        (tmp_path / "corpus.txt").write_text("\n".join(CORPUS * 3), encoding="utf-8")
        spec = DataSpec(text=str(tmp_path / "corpus.txt"))
    # Data ▸ ... on an opened HF model keeps the model (its weights) and adds the data
    with_data = opened(window, qtbot, lambda: window._build_from_dialogs(None, spec))
    assert with_data.model is model and with_data.data is not None
    window.controller.update_train_config(context=16, batch_size=8, eval_every=2, lr=3e-3)
    workspace = train_in_the_app(window, qtbot, steps=6)
    losses = [row["loss"] for row in workspace.history if "loss" in row]
    assert workspace.step == 6 and len(losses) == 6 and losses[-1] < losses[0]
    assert window.panels["curves"].train.size == 6  # the live curves got every step
    saved = window.save_checkpoint(tmp_path / "tuned")
    assert saved is not None and not (saved / "metrics.jsonl").exists()  # an HF folder, not ours
    auto = AutoModelForSeq2SeqLM if name == "marian" else AutoModelForCausalLM
    reloaded = auto.from_pretrained(saved).eval()
    ids = torch.tensor([workspace.tokenizer.encode(CORPUS[0])])
    # the probes and decodes that follow a training put the model in eval mode and back: wait for
    # them, or one may switch dropout back on under this comparison
    qtbot.waitUntil(lambda: not window.controller.prober.runner.busy and not any(
        panel.busy() for panel in window.panels.values()), timeout=LOAD_MS)
    workspace.model.eval()
    with torch.no_grad():
        extra = {"decoder_input_ids": ids} if name == "marian" else {}
        torch.testing.assert_close(workspace.model.hf(input_ids=ids, **extra).logits,
                                   reloaded(input_ids=ids, **extra).logits)
    again = opened(window, qtbot, lambda: window.open_path(saved))
    assert again.family == workspace.family and again.model is not model


def test_new_model_dialog_builds_an_hf_architecture_the_app_trains(make_main_window, qtbot, tmp_path):
    from transformers import GPT2Config

    window = make_main_window()
    window.new_model()
    dialog = window.last_dialog
    GPT2Config(n_layer=3, n_embd=48, n_head=4, n_positions=96,
               activation_function="relu").to_json_file(tmp_path / "config.json")
    dialog.set_family("hf-gpt2")  # the row of its config's hf_config field
    assert dialog.setting_widgets["hf_config"].load(tmp_path / "config.json")
    assert dialog.family_name() == "hf-gpt2" and dialog.preset.currentText() == "custom"
    config = dialog.model_config()
    assert (config.num_layers, config.d_model, config.num_heads, config.max_len) == (3, 48, 4, 96)
    assert json.loads(config.hf_config)["activation_function"] == "relu"
    assert "trainable parameters" in dialog.params.text()
    (tmp_path / "bad.json").write_text(json.dumps({"model_type": "llama"}))
    assert not dialog.setting_widgets["hf_config"].load(tmp_path / "bad.json")
    assert "llama" in dialog.params.text() and dialog.family_name() == "hf-gpt2"
    workspace = opened(window, qtbot, dialog.accept)
    hf = workspace.model.hf
    assert workspace.family == "hf-gpt2" and type(hf).__name__ == "GPT2LMHeadModel"
    assert (hf.config.n_layer, hf.config.activation_function) == (3, "relu")
    assert hf.config.vocab_size == workspace.tokenizer.vocab_size  # the data's tokenizer
    window.controller.update_train_config(context=16, batch_size=8, eval_every=0)
    assert train_in_the_app(window, qtbot, steps=3).step == 3
