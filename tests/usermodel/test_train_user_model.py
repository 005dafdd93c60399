"""`explorer train --model FILE.py:build`: a user's model trained headless by the project's trainer,
recorded as every run (config, append-only metrics, snapshots), its checkpoint the state dict plus
the build reference, reopened by `explorer decode --checkpoint DIR`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from explorer.cli import main
from explorer.data.batching import IGNORE_INDEX
from explorer.data.tasks import make_task

ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = ROOT / "models" / "gru_translator.py"
CHAR_GPT = ROOT / "models" / "char_gpt.py"


def _module(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"test_copy_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "gru"
    code = main(["train", "--model", f"{TRANSLATOR}:build", "--task", "reverse", "--steps", "12",
                 "--eval-every", "6", "--batch-size", "16", "--lr", "3e-3", "--snapshot-every", "6",
                 "--out", str(out)])
    assert code == 0
    return out


def test_the_run_folder_records_the_model_and_its_build(trained):
    config = json.loads((trained / "config.json").read_text())
    assert config["model"]["build"] == f"{TRANSLATOR.resolve()}:build"
    assert config["model"]["args"] == {} and config["model"]["family"] == "user-rnn-seq2seq"
    assert config["step"] == 12 and config["task"] == "reverse"
    rows = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "event" not in r] == list(range(1, 13))
    assert sorted(p.name for p in (trained / "snapshots").iterdir()) == [
        "step-000000", "step-000006", "step-000012"]
    # the checkpoint is the user's own state dict, under the user's names
    translator = _module(TRANSLATOR)
    model, _, _ = translator.build()
    state = load_file(str(trained / "model.safetensors"))
    assert set(state) == set(model.state_dict())


def test_the_first_loss_is_the_models_own_cross_entropy(trained):
    """Step 1's recorded loss, recomputed here: the untrained weights (snapshot 0) on the first
    batch, its sources of one length, the loss the model's own teacher-forced cross-entropy."""
    from explorer.training.config import TrainConfig
    from explorer.usermodel.training import UserTrainFeed
    from explorer.usermodel.loader import allow, load_user_checkpoint

    allow(f"{TRANSLATOR}:build")
    workspace = load_user_checkpoint(trained / "snapshots" / "step-000000")
    workspace.data = make_task("reverse")
    feed = UserTrainFeed(workspace, TrainConfig(batch_size=16, seed=0), max_eval=4)
    batch = feed.train_batch(1)
    assert (batch.src != workspace.model.config.pad_id).all()  # one source length: no padding
    model = workspace.model.inner.train()
    torch.manual_seed(0)
    logits = model(batch.src, batch.tgt_in)  # (B, T, V): the user's own forward
    expected = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=IGNORE_INDEX)
    rows = [json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines()]
    first = next(r for r in rows if r.get("step") == 1 and "event" not in r)
    assert first["loss"] == pytest.approx(float(expected.detach()), rel=1e-5)
    # targets: padding only at the end, never read as a target
    for out in batch.tgt_out:
        ignored = (out == IGNORE_INDEX).nonzero()
        if len(ignored):
            assert (out[int(ignored[0]):] == IGNORE_INDEX).all()


def test_decode_reopens_the_run_with_checkpoint(trained, capsys):
    assert main(["decode", "--checkpoint", str(trained), "--max-len", "12", "--json", "abc"]) == 0
    decoded = json.loads(capsys.readouterr().out)
    translator = _module(TRANSLATOR)
    model, vocab, _ = translator.build()
    model.load_state_dict(load_file(str(trained / "model.safetensors")))
    model.eval()
    src = torch.tensor([[vocab.index(c) for c in "abc"] + [vocab.index("<eos>")]])
    prefix = [vocab.index("<bos>")]
    with torch.no_grad():  # the model's own greedy loop
        while len(prefix) <= 12 and prefix[-1] != vocab.index("<eos>"):
            prefix.append(int(model(src, torch.tensor([prefix]))[0, -1].argmax()))
    assert decoded["hypotheses"][0]["token_ids"] == prefix[1:]


def test_a_language_model_trains_on_blocks_of_the_text(tmp_path):
    out = tmp_path / "gpt"
    assert main(["train", "--model", f"{CHAR_GPT}:build", "--task", "brackets", "--steps", "4",
                 "--eval-every", "4", "--batch-size", "4", "--context", "16", "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["family"] == "user-lm" and config["step"] == 4
    gpt = _module(CHAR_GPT)
    model, _, _ = gpt.build()
    before = model.state_dict()
    after = load_file(str(out / "model.safetensors"))
    assert any(not torch.equal(before[k], after[k]) for k in after)  # it trained


def test_model_flags_that_do_not_apply_are_one_line(tmp_path, capsys):
    for extra, flag in ((["--arch", "gpt"], "--arch"), (["--layers", "2"], "--layers"),
                        (["--tokenizer", "char"], "--tokenizer")):
        assert main(["train", "--model", f"{TRANSLATOR}:build", "--task", "reverse", *extra,
                     "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"explorer train: error: --model trains your model as its build() makes it; drop {flag}"
