"""Opening a model as written: a build file imports like a script, from any working directory;
the command line decodes, scores and exports it; bad input gives one line naming what is wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from explorer.errors import UserError
from explorer.usermodel.loader import make_workspace, open_model_file

HERE = Path(__file__).parent
GPT = f"{HERE / 'gpt' / 'build.py'}:build"
ROOT = HERE.parent.parent


def test_a_build_file_imports_its_sibling_from_another_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, modules = list(sys.path), set(sys.modules)
    workspace = open_model_file(GPT)
    assert type(workspace.model.inner).__name__ == "GPT"
    assert sys.path == path
    added = set(sys.modules) - modules
    folder = str(HERE / "gpt")
    assert "model" not in sys.modules and not [
        name for name in added if not name.startswith("explorer_user_")
        and str(getattr(sys.modules[name], "__file__", "") or "").startswith(folder)]
    assert workspace.tokenizer.encode("ab c") == [2, 3, 1, 4]  # characters, " " among them


def test_a_module_of_the_same_name_elsewhere_is_set_aside_and_back(monkeypatch):
    elsewhere = type(sys)("model")
    monkeypatch.setitem(sys.modules, "model", elsewhere)
    open_model_file(GPT)
    assert sys.modules["model"] is elsewhere


def test_a_module_path_works_as_before():
    workspace = open_model_file("tests.usermodels.lstm_mha:build")
    assert workspace.model.config.family == "user-rnn-seq2seq"


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_decodes_scores_and_draws_the_gpt(tmp_path):
    from explorer.usermodel.loader import call_build

    decoded = _cli("decode", "--model", GPT, "--max-len", "4", "--json", "ab", cwd=tmp_path)
    assert decoded.returncode == 0, decoded.stderr
    model, CHARS, _ = call_build(GPT)
    model.eval()  # as --model hands it over (nanoGPT's dropout off)
    prefix = [CHARS.index("a"), CHARS.index("b")]
    with torch.no_grad():
        for _ in range(4):
            prefix.append(int(model(torch.tensor([prefix]))[0][0, -1].argmax()))
            if prefix[-1] == CHARS.index("<eos>"):
                break
    assert json.loads(decoded.stdout)["hypotheses"][0]["token_ids"] == prefix[2:]
    scored = _cli("score", "--model", GPT, "--target", "ab", "--json", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    fed = torch.tensor([[1, 2, 3]])  # " " (the start id: no <bos>) a b
    with torch.no_grad():
        logits = model(fed, targets=fed)[0]
    target = torch.tensor([2, 3, CHARS.index("<eos>")])
    expected = F.log_softmax(logits.double(), -1)[0, torch.arange(3), target]
    assert json.loads(scored.stdout)["logprobs"] == pytest.approx(expected.tolist(), abs=1e-6)
    exported = _cli("export", "--model", GPT, "--plots", "attention", "--input", "abc de",
                    "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert "nothing to draw" not in exported.stderr
    assert list((tmp_path / "out").glob("attention*"))


def test_cli_decodes_and_scores_the_bahdanau_model_by_stepping(tmp_path):
    build = f"{HERE / 'bahdanau.py'}:build"
    sources = tmp_path / "sources.txt"
    sources.write_text("a b c\nd\ne f g h a b\n", encoding="utf-8")
    together = _cli("decode", "--model", build, "--input", str(sources), "--max-len", "5",
                    "--json", cwd=tmp_path)
    assert together.returncode == 0, together.stderr
    lines = json.loads(together.stdout)
    from explorer.decoding import greedy
    from explorer.decoding.scoring import encode_context

    workspace = open_model_file(build)
    for line, text in zip(lines, ["a b c", "d", "e f g h a b"]):
        alone = greedy(workspace.model, encode_context(workspace, text), max_len=5)
        assert line["hypotheses"][0]["token_ids"] == alone.token_ids
    scored = _cli("score", "--model", build, "--source", "a b", "--target", "c", cwd=tmp_path)
    assert scored.returncode == 0 and "Traceback" not in scored.stderr, scored.stderr


class WrongShape(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(12, 8)

    def forward(self, ids):
        return self.embed(ids)  # (B, T, 8): states, not logits


def test_bad_input_is_one_line():
    from tests.usermodels.lstm_mha import VOCAB, Seq2Seq

    with pytest.raises(UserError, match=r"^the model's forward returned logits of shape "
                                        r"\(2, 3, 8\); expected \(B, T, V\) with V at least the "
                                        r"tokenizer's 12 tokens$"):
        make_workspace(WrongShape(), VOCAB[:12])
    with pytest.raises(UserError, match=r"^the source tokenizer has 20 tokens but the model's "
                                        r"embedding 'embed' has 12 rows: ids past them cannot "
                                        r"be read"):
        make_workspace(Seq2Seq(), VOCAB + [f"x{i}" for i in range(8)])


def test_a_build_returning_wrong_types_is_one_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def build():\n    return 'model', 3, [1]\n", encoding="utf-8")
    with pytest.raises(UserError) as error:
        open_model_file(f"{bad}:build")
    message = str(error.value)
    assert "\n" not in message
    assert message == (f"{bad}:build: returned the wrong types (model: expected a "
                       "torch.nn.Module, got str; tokenizer: expected a tokenizer or a "
                       "vocabulary, got int; adapter: expected explorer.Adapter, got list)")


class HiddenAttention(torch.nn.Module):
    """Attention weights that weigh values by an elementwise product and a sum, not returned: the
    capture cannot tell them from any other softmax until the module is named."""

    def __init__(self, dim=8):
        super().__init__()
        self.score = torch.nn.Linear(dim, 1)

    def forward(self, x):  # (B, T, D)
        weights = torch.softmax(self.score(x).squeeze(-1), dim=-1)  # (B, T)
        return x + (weights.unsqueeze(-1) * x).sum(1, keepdim=True)


class PoolingLM(torch.nn.Module):
    def __init__(self, vocab=12, dim=8):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pool = HiddenAttention(dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.head(self.pool(self.embed(ids)))


def test_hidden_attention_is_said_in_one_line_or_found_by_name():
    from explorer.usermodel.adapter import Adapter
    from tests.usermodels.lstm_mha import VOCAB

    torch.manual_seed(0)
    model = PoolingLM()
    unnamed = make_workspace(model, VOCAB, Adapter(kind="lm"))
    assert unnamed.model.reading.attention == []
    assert unnamed.model.reading.why_no_attention.startswith("attention panels: no attention seen")
    assert "explorer.Adapter(attention='...')" in unnamed.model.reading.why_no_attention
    named = make_workspace(model, VOCAB, Adapter(kind="lm", attention="pool"))
    assert named.model.reading.attention == ["pool"]
    assert named.model.reading.why_no_attention is None
    with pytest.raises(UserError, match=r"^attention: the model has no module 'nowhere'$"):
        make_workspace(model, VOCAB, Adapter(kind="lm", attention="nowhere"))


def test_what_the_reading_says_and_who_handles_padding():
    from explorer.decoding.batching import handles_padding

    gpt = open_model_file(GPT)
    assert gpt.model.notes == ["the forward returns logits at 1 of 3 positions without targets; "
                               "the explorer passes targets= where it needs every position"]
    annotated = open_model_file(f"{HERE / 'annotated.py'}:build")
    assert handles_padding(annotated.model)  # its src_mask is filled from the pads
    assert not handles_padding(open_model_file(f"{HERE / 'lstm_mha.py'}:build").model)


class LastOnly(torch.nn.Module):
    """Logits at the last position only, and no argument that gives more."""

    def __init__(self, vocab=12, dim=8):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.head(self.embed(ids).cumsum(1)[:, -1:])  # (B, 1, V)


def test_last_position_logits_decode_and_say_in_one_line_what_scoring_needs():
    from explorer.decoding import greedy
    from explorer.decoding.scoring import encode_context, score
    from explorer.usermodel.adapter import Adapter
    from explorer.usermodel.call import LAST_ONLY
    from tests.usermodels.lstm_mha import VOCAB

    torch.manual_seed(0)
    model = LastOnly()
    workspace = make_workspace(model, VOCAB, Adapter(kind="lm"))
    assert workspace.model.notes == [LAST_ONLY]
    context = encode_context(workspace, "a b")
    prefix = list(context)
    with torch.no_grad():
        for _ in range(3):
            prefix.append(int(model(torch.tensor([prefix]))[0, -1].argmax()))
            if prefix[-1] == VOCAB.index("<eos>"):
                break
    assert greedy(workspace.model, context, max_len=3).token_ids == prefix[2:]
    with pytest.raises(UserError, match=r"^the model's forward returns logits at the last position "
                                        r"only, .* explorer.Adapter\(forward=lambda model"):
        score(workspace, None, "a b")
