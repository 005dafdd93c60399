"""New models with a Hugging Face architecture (hf-gpt2, hf-bert, hf-marian, hf-t5), built from the
size flags or a config.json, trained by the same Trainer and saved as our checkpoints. Checked
against transformers: the network is its own class with the asked sizes, and our loss is the one
its `labels=` computes."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

from explorer.cli import main  # noqa: E402
from explorer.training import DataSpec, build_workspace, load_checkpoint  # noqa: E402
from tests.hf.builders import CORPUS  # noqa: E402


def text_file(path):
    path.write_text("\n".join(CORPUS * 3), encoding="utf-8")
    return path


def pairs_file(path):
    path.write_text("\n".join(f"{s}\t{' '.join(reversed(s.split()))}" for s in CORPUS * 3),
                    encoding="utf-8")
    return path


def test_hf_config_file_builds_trains_saves_and_reopens(tmp_path, capsys):
    from transformers import GPT2Config, GPT2LMHeadModel

    GPT2Config(n_layer=1, n_embd=32, n_head=2, n_positions=48,
               activation_function="gelu_new").to_json_file(tmp_path / "config.json")
    out = tmp_path / "run"
    code = main(["train", "--hf-config", str(tmp_path / "config.json"), "--data",
                 str(text_file(tmp_path / "corpus.txt")), "--context", "32", "--steps", "30",
                 "--batch-size", "8", "--lr", "3e-3", "--eval-every", "15", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    losses = [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()
              if '"loss"' in line]
    assert losses[-1] < losses[0] - 0.5
    workspace = load_checkpoint(out)
    hf = workspace.model.hf
    assert workspace.family == "hf-gpt2" and isinstance(hf, GPT2LMHeadModel)
    assert (hf.config.n_layer, hf.config.n_embd, hf.config.n_positions) == (1, 32, 48)
    assert hf.config.activation_function == "gelu_new"  # the file's settings beyond the sizes
    assert hf.config.vocab_size == workspace.tokenizer.vocab_size  # the data's tokenizer
    # transformers' own loss (labels shifted inside the model) on a block equals our block loss
    from explorer.families import family_of
    from explorer.training import TrainConfig
    from explorer.training.feeds import make_feed

    batch = make_feed(workspace, TrainConfig(context=32, batch_size=4)).train_batch(1)
    workspace.model.eval()
    with torch.no_grad():
        ours = family_of(workspace.model).loss(workspace.model, batch).loss
        blocks = torch.cat([batch.tokens, batch.targets[:, -1:]], dim=1)  # (B, 33)
        theirs = hf(input_ids=blocks, labels=blocks).loss
    torch.testing.assert_close(ours, theirs)
    code = main(["decode", "--checkpoint", str(out), "the cat", "--max-len", "5"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("family, cls", [("hf-marian", "MarianMTModel"),
                                         ("hf-t5", "T5ForConditionalGeneration")])
def test_encoder_decoder_architectures_from_the_size_flags(family, cls, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["train", "--arch", family, "--data", str(pairs_file(tmp_path / "pairs.tsv")),
                 "--layers", "1", "--d-model", "32", "--heads", "2", "--steps", "4",
                 "--batch-size", "8", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    workspace = load_checkpoint(out)
    hf = workspace.model.hf
    assert type(hf).__name__ == cls and hf.config.d_model == 32
    assert hf.config.num_attention_heads == 2 and hf.config.num_hidden_layers == 1
    source_rows = hf.get_encoder().embed_tokens.weight.shape[0]
    if family == "hf-marian":  # our seq2seq's two vocabularies, one embedding each
        assert source_rows == workspace.src_tokenizer.vocab_size
        assert hf.get_output_embeddings().weight.shape[0] == workspace.tokenizer.vocab_size
    else:  # T5 shares one table: as large as the larger side, logits over the target side
        assert source_rows == max(workspace.src_tokenizer.vocab_size, workspace.tokenizer.vocab_size)
    src = torch.tensor([[5, 6, 7, 2]])
    with torch.no_grad():
        logits = workspace.model(src, torch.tensor([[1, 5]]))
    assert logits.shape == (1, 2, workspace.tokenizer.vocab_size)
    assert main(["decode", "--checkpoint", str(out), CORPUS[0], "--beam", "3", "--max-len", "4"]) == 0


def test_hf_bert_learns_the_masked_tokens_as_transformers_scores_them():
    from explorer.families import family_of
    from explorer.training import TrainConfig
    from explorer.training.feeds import make_feed

    workspace = build_workspace(DataSpec(task="brackets", n_train=64, n_val=8), "hf-bert",
                                preset="tiny", max_len=32, dropout=0.0)
    hf = workspace.model.hf
    assert type(hf).__name__ == "BertForMaskedLM" and hf.config.num_hidden_layers == 2
    batch = make_feed(workspace, TrainConfig(context=16, batch_size=4)).train_batch(1)
    assert (batch.tokens == workspace.model.config.mask_id).any()  # our <mask> id is BERT's input
    output = family_of(workspace.model).loss(workspace.model, batch)
    theirs = hf(input_ids=batch.tokens, labels=batch.targets).loss  # -100: not predicted
    torch.testing.assert_close(output.loss, theirs)
    assert 0 < output.tokens < batch.targets.numel()


@pytest.mark.parametrize("content, message", [
    ({"model_type": "llama"}, "not one the explorer builds"),
    ({"model_type": "gpt2", "auto_map": {"AutoModel": "x.Y"}}, "trust_remote_code"),
    ([1, 2], "not one the explorer builds"),
])
def test_bad_hf_config_files_are_one_line_errors(content, message, tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(content))
    code = main(["train", "--hf-config", str(tmp_path / "config.json"), "--data",
                 str(text_file(tmp_path / "corpus.txt")), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_hf_config_and_arch_must_agree(tmp_path, capsys):
    from transformers import BertConfig

    BertConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
               intermediate_size=64).to_json_file(tmp_path / "config.json")
    code = main(["train", "--hf-config", str(tmp_path / "config.json"), "--arch", "hf-gpt2",
                 "--data", str(text_file(tmp_path / "corpus.txt")), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "describes a hf-bert model" in err


def test_resume_refuses_a_new_architecture(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    code = main(["train", "--resume", str(tmp_path / "run"), "--hf-config",
                 str(tmp_path / "config.json")])
    err = capsys.readouterr().err
    assert code == 2 and "drop --hf-config" in err
