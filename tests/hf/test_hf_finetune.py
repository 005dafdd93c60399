"""`explorer train --from HF_DIR`: the Trainer fine-tunes an HF causal LM, saved with save_pretrained
(encoder-decoders: test_hf_finetune_seq2seq.py)."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from explorer.cli import main  # noqa: E402


def corpus(path):
    rng = random.Random(0)
    words = "the cat sat on the mat a dog ran in the park".split()
    path.write_text("\n".join(" ".join(rng.choice(words) for _ in range(10)) for _ in range(120)))
    return path


def next_token_loss(folder, text):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = torch.tensor([AutoTokenizer.from_pretrained(folder)(text)["input_ids"]])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1]
    return F.cross_entropy(logits, ids[0, 1:]).item()


def test_train_from_hf_folder_saves_an_hf_folder(hf_models, tmp_path, capsys):
    from explorer.hf import open_hf_model

    data = corpus(tmp_path / "corpus.txt")
    out = tmp_path / "tuned"
    code = main(["train", "--from", str(hf_models("gpt2")), "--data", str(data), "--steps", "25",
                 "--context", "32", "--batch-size", "8", "--lr", "3e-3", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "val loss" in err
    text = data.read_text().splitlines()[0]
    assert next_token_loss(out, text) < next_token_loss(hf_models("gpt2"), text) - 0.5
    reopened = open_hf_model(out)  # it reopens in the explorer, and transformers reads it (above)
    assert reopened.family == "hf-causal-lm"
    assert reopened.tokenizer.encode(text) == open_hf_model(hf_models("gpt2")).tokenizer.encode(text)


def test_train_from_refuses_what_it_cannot_train(hf_models, tmp_path, capsys):
    data = corpus(tmp_path / "corpus.txt")
    code = main(["train", "--from", str(hf_models("bert")), "--data", str(data), "--steps", "2",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "masked LM" in err
    code = main(["train", "--from", str(hf_models("marian")), "--data", str(data), "--steps", "2",
                 "--out", str(tmp_path / "out")])  # an encoder-decoder reads pairs from --data
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "source<TAB>target" in err
    code = main(["train", "--from", str(hf_models("gpt2")), "--data", str(data), "--steps", "2"])
    assert code == 2 and "--out" in capsys.readouterr().err
