"""`--model FILE.py:build [--weights]` on the command line: decode and score run on the user's model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from explorer.cli import main
from tests.usermodel import homework_seq2seq

HOMEWORK = f"{Path(homework_seq2seq.__file__)}:build"


def test_decode_and_score_take_model(tmp_path, capsys):
    model, vocab = homework_seq2seq.build(seed=5)
    weights = tmp_path / "model.safetensors"
    from safetensors.torch import save_file

    save_file(model.state_dict(), str(weights))
    assert main(["decode", "--model", HOMEWORK, "--weights", str(weights), "--max-len", "5",
                 "--json", "a b c"]) == 0
    decoded = json.loads(capsys.readouterr().out)
    ids = [vocab.index(t) for t in "a b c <eos>".split()]
    prefix = [vocab.index("<bos>")]
    with torch.no_grad():  # greedy by hand, with the weights file's model
        while len(prefix) <= 5 and prefix[-1] != vocab.index("<eos>"):
            prefix.append(int(model(torch.tensor([ids]), torch.tensor([prefix]))[0, -1].argmax()))
    assert decoded["hypotheses"][0]["token_ids"] == prefix[1:]
    assert main(["score", "--model", HOMEWORK, "--weights", str(weights), "--source", "a b",
                 "--target", "c d", "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    src = [vocab.index(t) for t in "a b <eos>".split()]
    target = [vocab.index(t) for t in "c d <eos>".split()]
    with torch.no_grad():
        logits = model(torch.tensor([src]), torch.tensor([[vocab.index("<bos>")] + target[:-1]]))
    expected = torch.log_softmax(logits.double(), -1)[0, torch.arange(3), torch.tensor(target)]
    assert scored["logprobs"] == pytest.approx([float(x) for x in expected], abs=1e-6)


def test_model_flag_errors_are_one_line(tmp_path, capsys):
    assert main(["score", "--model", "nowhere.py:build", "--target", "a"]) == 2
    assert capsys.readouterr().err.strip() == "explorer score: error: nowhere.py: no such model file"
    assert main(["score", "--model", HOMEWORK, "--weights", str(tmp_path / "x.pt"),
                 "--target", "a"]) == 2
    assert "x.pt: no such weights file" in capsys.readouterr().err
    assert main(["score", "--checkpoint", str(tmp_path), "--weights", "w.pt", "--target", "a"]) == 2
    assert "--weights and --tokenizer go with --model" in capsys.readouterr().err


def test_attribute_takes_model(capsys):
    assert main(["attribute", "--model", HOMEWORK, "--source", "a b", "--target", "c",
                 "--method", "saliency", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["source"] == ["a", "b", "<eos>"] and document["prefix"] == ["<bos>", "c"]
    model, vocab = homework_seq2seq.build()
    src, tgt_in = torch.tensor([[4, 5, 2]]), torch.tensor([[1, 6]])
    with torch.no_grad():  # each output's target is its log-probability under the model
        logprobs = torch.log_softmax(model(src, tgt_in), -1)[0]
    assert [o["token"] for o in document["outputs"]] == ["c", "<eos>"]
    assert document["outputs"][0]["target"] == pytest.approx(float(logprobs[0, 6]), abs=1e-5)
