import errno
import json
import pickle

import pytest
import torch

from explorer.errors import UserError
from explorer.events import StepMetrics
from explorer.training import Trainer, demo_checkpoints, load_checkpoint, save_checkpoint
from explorer.training.checkpoint import OPTIMIZER_FILE


def losses_of(trainer):
    return [e.loss for e in trainer.run() if isinstance(e, StepMetrics)]


def stop_after(trainer, last_step):
    losses = []
    for event in trainer.run():
        if isinstance(event, StepMetrics):
            losses.append(event.loss)
            if event.step == last_step:
                trainer.control.stop()  # honoured before the next step
    return losses


@pytest.mark.parametrize("family", ["transformer", "rnn-lm"])
def test_resume_continues_exactly(tmp_path, family, tiny_workspace, tiny_config):
    extra = {"dropout": 0.2} if family == "transformer" else {}
    config = tiny_config(steps=10, schedule="cosine", warmup=2)
    straight = tiny_workspace(family, **extra)
    straight_losses = losses_of(Trainer(straight, config))

    first = tiny_workspace(family, **extra)
    first_losses = stop_after(Trainer(first, config), 5)
    save_checkpoint(first, tmp_path / "ck")
    resumed = load_checkpoint(tmp_path / "ck")
    assert resumed.step == 5 and resumed.training_state is not None
    assert resumed.train_config == config
    resumed_losses = losses_of(Trainer(resumed, resumed.train_config))

    assert first_losses + resumed_losses == straight_losses
    for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values()):
        assert torch.equal(a, b)
    assert [row["step"] for row in resumed.history] == list(range(1, 11))


def test_round_trip_keeps_weights_tokenizers_and_metrics(tmp_path, tiny_workspace, tiny_config):
    workspace = tiny_workspace("seq2seq")
    list(Trainer(workspace, tiny_config(steps=3, eval_every=3)).run())
    path = save_checkpoint(workspace, tmp_path / "run")
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json", "metrics.jsonl", "model.safetensors", "optimizer.pt",
        "src_tokenizer.json", "tgt_tokenizer.json",
    ]
    config = json.loads((path / "config.json").read_text())
    assert config["step"] == 3 and config["task"] == "copy"
    assert config["tokenizers"] == {"tgt": "char", "src": "char"}
    assert config["train"]["steps"] == 3 and config["model"]["family"] == "seq2seq"
    rows = [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert {"step", "loss", "lr", "grad_norm", "tokens_per_s"} <= set(rows[0])
    assert "val_loss" in rows[2] and "val_loss" not in rows[0]

    loaded = load_checkpoint(path)
    assert loaded.data.train == workspace.data.train  # rebuilt from the task and its seed
    assert loaded.src_tokenizer.encode("abc") == workspace.src_tokenizer.encode("abc")
    src = torch.tensor([[5, 6, 7, 2]])
    tgt = torch.tensor([[1, 5, 6]])
    workspace.model.eval()
    assert torch.equal(workspace.model(src, tgt), loaded.model(src, tgt))


def test_tied_weights_survive_a_round_trip(tmp_path, tiny_workspace):
    workspace = tiny_workspace("gpt")  # tie_weights=True: one matrix at both ends
    save_checkpoint(workspace, tmp_path / "gpt", optimizer=False)
    assert not (tmp_path / "gpt" / OPTIMIZER_FILE).exists()
    loaded = load_checkpoint(tmp_path / "gpt")
    tokens = torch.tensor([[5, 6, 7]])
    workspace.model.eval()
    assert torch.equal(workspace.model(tokens), loaded.model(tokens))


class RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))  # unpickling would create the marker file


def test_a_crafted_pickle_as_optimizer_state_is_refused_and_runs_nothing(tmp_path, tiny_workspace):
    workspace = tiny_workspace("gpt")
    path = save_checkpoint(workspace, tmp_path / "ck")
    marker = tmp_path / "pwned"
    for write in (
        lambda f: pickle.dump({"state": RunsCode(marker)}, f),
        lambda f: torch.save({"state": RunsCode(marker)}, f),  # the zip format, same payload
    ):
        with open(path / OPTIMIZER_FILE, "wb") as f:
            write(f)
        with pytest.raises(UserError, match="refused") as refused:
            load_checkpoint(path)
        assert "weights_only" not in str(refused.value)  # never the advice to load it anyway
        assert not marker.exists()


def test_save_is_atomic_and_refuses_folders_that_are_not_checkpoints(
    tmp_path, monkeypatch, tiny_workspace
):
    workspace = tiny_workspace("gpt")
    precious = tmp_path / "documents"
    precious.mkdir()
    (precious / "thesis.txt").write_text("years of work")
    with pytest.raises(UserError, match="not a checkpoint"):
        save_checkpoint(workspace, precious)
    assert (precious / "thesis.txt").read_text() == "years of work"

    target = save_checkpoint(workspace, tmp_path / "ck")
    before = (target / "config.json").read_text()
    workspace.step = 99

    def broken(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("safetensors.torch.save_model", broken)
    with pytest.raises(UserError, match="the disk is full.*previous checkpoint there is unchanged"):
        save_checkpoint(workspace, target)
    assert (target / "config.json").read_text() == before  # the old checkpoint is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck", "documents"]  # no debris


def test_loading_garbage_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_checkpoint(tmp_path / "bad")


def test_demo_checkpoints_are_small_and_open():
    demos = demo_checkpoints()
    assert set(demos) == {"dates-gru-additive", "translate-toy-transformer"}
    for name, folder in demos.items():
        size = sum(p.stat().st_size for p in folder.iterdir())
        assert size < 2_000_000, (name, size)
        workspace = load_checkpoint(folder)
        assert workspace.step > 0 and workspace.data is not None
        assert any(row.get("bleu") is not None for row in workspace.history)
    assert load_checkpoint(demos["dates-gru-additive"]).model.config.attention == "additive"
