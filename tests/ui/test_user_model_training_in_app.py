"""A user's model in the app: trained by the app's trainer on a built-in task (the Data dialog's
path keeps the model), and bad model code leaves the open window with its model."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from explorer.training.setup import DataSpec
from tests.usermodel import bad_models, homework_seq2seq

LOAD_MS = 60_000
ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = f"{ROOT / 'models' / 'gru_translator.py'}:build"
HOMEWORK = f"{Path(homework_seq2seq.__file__)}:build"
BAD = Path(bad_models.__file__)


def test_the_apps_trainer_trains_a_user_model_on_a_task(make_main_window, qtbot):
    window = make_main_window(create_panels=False)
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as opened:
        window.controller.open_model_code(TRANSLATOR)
    model = opened.args[0].model.inner
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as attached:
        window._build_from_dialogs(None, DataSpec(task="reverse"))  # the Data dialog's OK
    workspace = attached.args[0]
    assert workspace.model.inner is model and workspace.task == "reverse"  # the same model
    steps = []
    window.bus.step_metrics.connect(lambda batch: steps.extend(m.step for m in batch))
    with qtbot.waitSignal(window.controller.training_finished, timeout=LOAD_MS) as finished:
        window.controller.train(steps=5)
    assert finished.args[0].reason == "done" and workspace.step == 5
    qtbot.waitUntil(lambda: steps[-1:] == [5], timeout=LOAD_MS)
    assert steps == [1, 2, 3, 4, 5]  # every step reached the live panels
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    folder = window.controller.run_folder  # recorded as every run: config, metrics, weights
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "event" not in r] == [1, 2, 3, 4, 5]
    config = json.loads((folder / "config.json").read_text())
    assert config["model"]["build"] == f"{(ROOT / 'models' / 'gru_translator.py').resolve()}:build"
    assert config["model"]["args"] == {}  # `explorer decode --checkpoint` reopens it


def test_data_of_the_wrong_kind_is_one_line_and_the_model_stays(make_main_window, qtbot):
    window = make_main_window(create_panels=False)
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as opened:
        window.controller.open_model_code(TRANSLATOR)
    with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as shown:
        window._build_from_dialogs(None, DataSpec(task="brackets"))
    assert shown.args[0] == "your encoder-decoder trains on (source, target) pairs, not lm data"
    assert window.controller.workspace is opened.args[0]


def test_bad_model_code_keeps_the_open_model(make_main_window, qtbot, tmp_path):
    other = tmp_path / "other.pt"
    torch.save(homework_seq2seq.build()[0].state_dict(), other)
    window = make_main_window(create_panels=False)
    with qtbot.waitSignal(window.bus.workspace_changed, timeout=LOAD_MS) as opened:
        window.controller.open_model_code(HOMEWORK)
    kept = opened.args[0]
    cases = [((f"{BAD}:wrong_shape", None), "the model's forward returned logits of shape (2, 12)"),
             ((f"{BAD}:small_embedding", None), "the tokenizer has 12 tokens but the model's "
                                                "embedding 'embed' has 5 rows"),
             ((f"{BAD}:wrong_types", None), "returned the wrong types (model: expected a "
                                            "torch.nn.Module, got str"),
             ((f"{BAD}:right", str(other)), "other.pt: the weights do not fit the model")]
    for (build, weights), expected in cases:
        for open_it in (window.controller.open_model_code, window.controller.check_model_code):
            with qtbot.waitSignal(window.error_shown, timeout=LOAD_MS) as shown:
                open_it(build, weights)
            message = shown.args[0]
            assert expected in message and "\n" not in message, message
            window.error_boxes[-1].accept()
            qtbot.waitUntil(lambda: not window.error_boxes)
            assert window.controller.workspace is kept


def test_a_model_given_to_explorer_show_trains_on_its_data(make_main_window, qtbot, monkeypatch):
    import explorer
    from explorer.ui import show_window

    monkeypatch.setattr(show_window, "new_window", lambda: make_main_window(create_panels=False))
    monkeypatch.setattr(show_window, "_window", None)
    model, vocab = homework_seq2seq.build()
    pairs = [("a b c", "c b a"), ("d e", "e d"), ("f g h", "h g f"), ("b a", "a b")]
    window = explorer.show(model, vocab, data=pairs, block=False)
    qtbot.waitUntil(lambda: window.controller.workspace is not None, timeout=LOAD_MS)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with qtbot.waitSignal(window.controller.training_finished, timeout=LOAD_MS) as finished:
        window.controller.train(steps=3)
    assert finished.args[0].reason == "done" and window.controller.workspace.step == 3
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
