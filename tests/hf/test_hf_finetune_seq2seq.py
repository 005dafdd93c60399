"""Fine-tuning an HF encoder-decoder (Marian, T5) with the explorer's Trainer, checked against
transformers itself: the loss is the one `labels=` gives, it falls, and the saved folder is what
`AutoModelForSeq2SeqLM.from_pretrained` reads back with the same logits."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

from explorer.cli import main  # noqa: E402
from explorer.events import StepMetrics  # noqa: E402
from explorer.training import DataSpec, TrainConfig, Trainer  # noqa: E402
from tests.hf.builders import CORPUS  # noqa: E402

PAIRS = [(line, " ".join(reversed(line.split()))) for line in dict.fromkeys(CORPUS)]


def write_pairs(path, repeat=6):
    path.write_text("\n".join(f"{s}\t{t}" for s, t in PAIRS * repeat) + "\n", encoding="utf-8")
    return path


def hf_loss(model, tokenizer, pairs):
    """transformers' own teacher-forced loss: labels from text_target, padding labelled -100."""
    batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], padding=True,
                      return_tensors="pt")
    labels = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    if tokenizer.pad_token_id == model.config.decoder_start_token_id:  # Marian: pad starts
        lengths = [len(tokenizer(text_target=t)["input_ids"]) for _, t in pairs]
        labels = batch["labels"].clone()
        for row, length in enumerate(lengths):
            labels[row, length:] = -100
    with torch.no_grad():
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     labels=labels).loss.item()


def finetuned(hf_models, name, tmp_path, steps=30):
    from explorer.hf.finetune import open_for_finetuning

    data = write_pairs(tmp_path / "pairs.tsv")
    workspace = open_for_finetuning(hf_models(name), lambda kind: DataSpec(tsv=str(data)))
    config = TrainConfig(steps=steps, batch_size=8, lr=3e-3, eval_every=0, bleu_examples=0,
                         device="cpu", num_threads=1, seed=0)
    events = list(Trainer(workspace, config).run())
    return workspace, [e.loss for e in events if isinstance(e, StepMetrics)]


@pytest.mark.parametrize("name", ["marian", "t5"])
def test_the_pair_loss_is_transformers_own(hf_models, name, tmp_path):
    from explorer.families import family_of
    from explorer.hf.finetune import open_for_finetuning
    from explorer.training.feeds import make_feed

    data = write_pairs(tmp_path / "pairs.tsv", repeat=2)
    workspace = open_for_finetuning(hf_models(name), lambda kind: DataSpec(tsv=str(data)))
    feed = make_feed(workspace, TrainConfig(batch_size=4, device="cpu"))
    batch = feed.val.collate(range(len(feed.val)))
    with torch.no_grad():
        ours = family_of(workspace.model).loss(workspace.model, batch).loss.item()
    reference = hf_loss(workspace.model.hf, workspace.tokenizer.hf, feed.val_pairs)
    assert ours == pytest.approx(reference, rel=1e-5)


@pytest.mark.parametrize("name", ["marian", "t5"])
def test_finetuning_lowers_the_loss_and_saves_what_transformers_reads(hf_models, name, tmp_path):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from explorer.hf.finetune import save_hf_model

    before = hf_loss(AutoModelForSeq2SeqLM.from_pretrained(hf_models(name)).eval(),
                     AutoTokenizer.from_pretrained(hf_models(name)), PAIRS)
    workspace, losses = finetuned(hf_models, name, tmp_path)
    assert len(losses) == 30 and sum(losses[-5:]) < sum(losses[:5]) - 1.0
    out = save_hf_model(workspace, tmp_path / "tuned")
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(out).eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert hf_loss(reloaded, tokenizer, PAIRS) < before - 0.4
    workspace.model.eval()
    src = torch.tensor([tokenizer(PAIRS[0][0])["input_ids"]])
    tgt = torch.tensor([[reloaded.config.decoder_start_token_id]
                        + tokenizer(text_target=PAIRS[0][1])["input_ids"][:-1]])
    with torch.no_grad():
        theirs = reloaded(input_ids=src, decoder_input_ids=tgt).logits
        ours = workspace.model.hf(input_ids=src, decoder_input_ids=tgt).logits
    torch.testing.assert_close(ours, theirs)


def test_train_from_an_encoder_decoder_on_pairs(hf_models, tmp_path, capsys):
    from explorer.training import load_checkpoint

    data = write_pairs(tmp_path / "pairs.tsv")
    out = tmp_path / "tuned"
    code = main(["train", "--from", str(hf_models("marian")), "--data", str(data), "--steps", "12",
                 "--batch-size", "8", "--eval-every", "6", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "BLEU" in err and "val loss" in err  # evaluations decode with the model's own ids
    reopened = load_checkpoint(out)  # the app's loader opens the saved HF folder
    assert reopened.family == "hf-seq2seq"
    assert reopened.tokenizer.encode(PAIRS[0][0]) == load_checkpoint(
        hf_models("marian")).tokenizer.encode(PAIRS[0][0])


def test_train_from_refuses_text_for_an_encoder_decoder(hf_models, tmp_path, capsys):
    text = tmp_path / "corpus.txt"
    text.write_text("\n".join(CORPUS), encoding="utf-8")
    code = main(["train", "--from", str(hf_models("t5")), "--src", str(text), "--steps", "2",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--tgt" in err
    code = main(["train", "--from", str(hf_models("gpt2")), "--src", str(text), "--tgt", str(text),
                 "--steps", "2", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "plain text" in err


@pytest.mark.parametrize("name", ["gpt2", "marian", "t5"])
def test_every_trainable_parameter_survives_save_pretrained(hf_models, name, tmp_path):
    """Whatever training may change is what the saved folder holds: transformers 5.24 loads
    Marian's sinusoidal tables (never saved) as trainable, which broke this for fine-tunes."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from explorer.hf import open_hf_model
    from explorer.hf.finetune import save_hf_model

    workspace = open_hf_model(hf_models(name))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():  # what an optimiser step does to every parameter it is given
        for parameter in workspace.model.hf.parameters():
            if parameter.requires_grad:
                parameter.add_(0.01 * torch.randn(parameter.shape, generator=generator))
    out = save_hf_model(workspace, tmp_path / "saved")
    auto = AutoModelForCausalLM if name == "gpt2" else AutoModelForSeq2SeqLM
    reloaded = auto.from_pretrained(out).state_dict()
    ours = workspace.model.hf.state_dict()
    assert reloaded.keys() == ours.keys()
    for key, value in ours.items():
        torch.testing.assert_close(reloaded[key], value, msg=key)
