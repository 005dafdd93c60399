"""A model opened without data is probed on text its vocabulary holds (not "the quick brown fox"
read as all <unk>), `gui` and `export` take `--probe TEXT` / `--probe-target TEXT`, and `decode`
says in one line which words it read as <unk>."""

from __future__ import annotations

import torch
from torch import nn

from explorer.analysis.probe_input import default_probe_input
from explorer.cli import build_parser, main
from explorer.data.tokenizers import WordTokenizer
from explorer.training.checkpoint import save_checkpoint
from explorer.usermodel.show import shown_workspace
from explorer.workspace import Workspace
from seqmodels.config import build_model, make_config

LETTERS = ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c", "d", "e"]


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(len(LETTERS), 8)
        self.out = nn.Linear(8, len(LETTERS))

    def forward(self, ids):
        return self.out(self.embedding(ids))  # (B, T, V)


def test_a_users_model_without_data_is_probed_on_its_own_tokens():
    workspace = shown_workspace(TinyLM(), LETTERS, kind="lm")
    assert workspace.data is None or not workspace.data.val
    source, _ = default_probe_input(workspace)
    tokenizer = workspace.tokenizer
    unk = LETTERS.index("<unk>")
    # the phrase the app used to probe is all <unk> for this vocabulary...
    assert set(tokenizer.encode("the quick brown fox")) <= {unk, LETTERS.index("<eos>")}
    # ...the probe now reads back as the vocabulary's own letters, none of them <unk>
    ids = tokenizer.encode(source)
    assert ids and unk not in ids
    assert set(source.split()) <= set(LETTERS[4:])


def test_an_english_vocabulary_keeps_the_familiar_phrase():
    tokenizer = WordTokenizer.train(["the quick brown fox jumps"])
    workspace = Workspace(build_model(make_config("gpt", "tiny", vocab_size=tokenizer.vocab_size,
                                                  max_len=16)), tokenizer)
    assert default_probe_input(workspace)[0] == "the quick brown fox"


def test_gui_and_export_take_a_probe():
    parser = build_parser()
    gui = parser.parse_args(["gui", "--probe", "a b c", "--probe-target", "c b a"])
    assert (gui.probe, gui.probe_target) == ("a b c", "c b a")
    export = parser.parse_args(["export", "--checkpoint", "x", "--out", "o",
                                "--probe", "a b c", "--probe-target", "c b a"])
    assert (export.input, export.target) == ("a b c", "c b a")


def test_decode_names_the_words_it_read_as_unk(tmp_path, capsys):
    tokenizer = WordTokenizer.train(["a b c d e"])
    torch.manual_seed(0)
    model = build_model(make_config("gpt", "tiny", vocab_size=tokenizer.vocab_size, max_len=32))
    folder = save_checkpoint(Workspace(model, tokenizer), tmp_path / "lm", optimizer=False)
    assert main(["decode", "--checkpoint", str(folder), "--max-len", "3", "a z q"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    notes = [line for line in err if "<unk>" in line]
    assert notes == ["explorer decode: not in the model's vocabulary, read as <unk>: 'z', 'q'"]
    assert main(["decode", "--checkpoint", str(folder), "--max-len", "3", "a b c"]) == 0
    assert "<unk>" not in capsys.readouterr().err
