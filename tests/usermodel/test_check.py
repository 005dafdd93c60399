"""`explorer check`: what it says it found is what the model holds (checked against the model's own
modules and computation), and the panels it says are empty are empty when drawn headless."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from explorer.cli import main
from explorer.export.headless import HeadlessInput
from explorer.families import Lazy
from explorer.panel_registry import find_panel
from explorer.usermodel.check import FIX, NOT_HERE, OK, check_model_file
from explorer.usermodel.loader import open_model_file
from tests.usermodel import hidden_attention, homework_gpt, homework_seq2seq

HIDDEN = f"{Path(hidden_attention.__file__)}:build"
SEQ2SEQ = f"{Path(homework_seq2seq.__file__)}:build"
GPT = f"{Path(homework_gpt.__file__)}:build"


def _verdicts(report) -> dict[str, str]:
    return {v.name: v.status for v in report.panels + report.commands}


def _drawn(build: str, panel: str, source: str, target: str = "") -> bool:
    """Whether the panel's tables, computed headless as `explorer export` does, hold anything."""
    given = HeadlessInput(open_model_file(build), source, target)
    return bool(Lazy(find_panel(panel).tables)(given))


def test_hidden_attention_says_which_panels_are_empty_and_why(capsys):
    assert main(["check", "--model", HIDDEN]) == 1
    out = capsys.readouterr().out
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("  ")}
    for panel in ("attention", "ablation", "rollout"):
        assert lines[panel].split()[0] == FIX
        assert "empty: attention computed where the explorer cannot see it: attn" in lines[panel]
        assert "fix: compute the weights with torch.softmax there and name the module: " \
               "explorer.Adapter(attention='attn')" in lines[panel]
    assert "attn (SelfAttention): ran, but no attention weights were seen" in out
    assert out.rstrip().endswith("each line says how to fix it")
    # the panels it names are indeed empty, and those it passes draw
    assert not _drawn(HIDDEN, "attention", "abc ab")
    assert not _drawn(HIDDEN, "rollout", "abc ab")
    assert _drawn(HIDDEN, "embeddings", "abc ab") and _drawn(HIDDEN, "gradients", "abc ab")


def test_seq2seq_report_matches_the_model():
    report = check_model_file(SEQ2SEQ)
    model, vocab = homework_seq2seq.build()
    assert report.kind.startswith("seq2seq: read from forward(src, tgt_in)")
    assert report.attention == ["attention: nn.MultiheadAttention, cross-attention, "
                                f"{model.attention.num_heads} head(s)"]
    assert [r.split(":")[0] for r in report.recurrent] == ["encoder", "decoder"]
    assert f"{len(vocab)} tokens; bos <bos>=1, eos <eos>=2, pad <pad>=0, unk <unk>=3" in report.tokenizer
    assert report.logits.startswith(f"(1, 4, {len(vocab)}) for inputs (1, 4) and (1, 4) (every position)")
    verdicts = _verdicts(report)
    assert verdicts["rollout"] == NOT_HERE and verdicts["fill"] == NOT_HERE  # nothing to show
    assert all(verdicts[p] == OK for p in ("attention", "hidden", "gates", "score", "train"))
    assert report.exit_code == 0
    for panel, status in verdicts.items():  # what it says works does draw headless
        if panel in ("attention", "hidden", "gates", "embeddings", "gradients", "beam"):
            assert _drawn(SEQ2SEQ, panel, "a b c", "c b a") == (status == OK), panel


def test_padding_is_tried_against_the_models_own_computation():
    """The homework reads pads as tokens: its own log-probabilities for a source alone and padded
    beside a longer one differ, and the report says so; a GPT's prompts are never padded."""
    model, vocab = homework_seq2seq.build()
    model.eval()
    src = torch.tensor([[4, 5, 6, 2]])
    padded = torch.tensor([[4, 5, 6, 2, 0, 0, 0, 0], [4, 5, 6, 4, 5, 6, 4, 2]])
    tgt_in = torch.tensor([[1, 6, 5, 4]])
    with torch.no_grad():
        alone = model(src, tgt_in).log_softmax(-1)
        together = model(padded, tgt_in.expand(2, -1)).log_softmax(-1)[:1]
    assert (alone - together).abs().max() > 1e-3
    assert check_model_file(SEQ2SEQ).padding.startswith("changes the output")
    assert check_model_file(GPT).padding.startswith("language models: each prompt runs alone")


def test_json_report(capsys):
    assert main(["check", "--model", GPT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["exit_code"] == 0
    assert [a.split(":")[0] for a in report["attention"]] == ["blocks.0.self_attn", "blocks.1.self_attn"]


NANOGPT = f"{Path(__file__).parents[1] / 'usermodels' / 'gpt' / 'build.py'}:build"


def test_a_forward_that_gives_every_position_with_targets_checks_clean(tmp_path, monkeypatch, capsys):
    """nanoGPT's forward(idx, targets=None): the last position alone without targets, every
    position with them. The explorer passes targets=, so nothing needs a fix (exit 0); opened from
    another folder, its build imports model.py beside it."""
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--model", NANOGPT]) == 0
    out = capsys.readouterr().out
    inner = open_model_file(NANOGPT).model.inner
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    with torch.no_grad():
        last, _ = inner(ids)  # the model's own computation, both ways
        every, _ = inner(ids, targets=ids)
    assert last.shape[1] == 1 and every.shape[1] == ids.shape[1]
    assert f"{tuple(every.shape)} for inputs (1, 5) (every position)" in out
    assert "the explorer passes targets= where it needs every position" in out
    lines = {line.split()[1]: line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert all(lines[c] == OK for c in ("score", "evaluate", "train", "attribute", "attention"))


class PooledAttention(torch.nn.Module):
    """Causal attention by hand whose softmax weighs the values by a product and a sum, not a
    matmul: the capture takes it only once the adapter names the module."""

    def __init__(self, dim=16):
        super().__init__()
        self.q, self.k = torch.nn.Linear(dim, dim), torch.nn.Linear(dim, dim)

    def forward(self, x):  # (B, T, D)
        weights = torch.softmax(self.scores(x), dim=-1)  # (B, T, T)
        return (weights.unsqueeze(-1) * x.unsqueeze(1)).sum(2)  # (B, T, D)

    def scores(self, x):
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / x.shape[-1] ** 0.5  # (B, T, T)
        causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        return scores.masked_fill(~causal, float("-inf"))


def test_the_hidden_attention_fix_it_names_makes_the_panels_draw():
    from explorer.usermodel.adapter import Adapter
    from explorer.usermodel.capture import capture
    from explorer.usermodel.check import check_workspace
    from explorer.usermodel.loader import make_workspace

    model, vocab = hidden_attention.build()
    model.attn = PooledAttention()
    model.eval()
    unnamed = check_workspace(make_workspace(model, vocab), "pooled")
    fix = next(v for v in unnamed.panels if v.name == "attention")
    assert unnamed.exit_code == 1 and fix.status == FIX
    assert fix.fix.startswith("compute the weights with torch.softmax there and name the module: "
                              "explorer.Adapter(attention='attn')")
    named = make_workspace(model, vocab, Adapter(attention="attn"))
    report = check_workspace(named, "pooled")
    assert report.exit_code == 0 and _verdicts(report)["attention"] == OK
    assert report.attention == ["attn: a softmax in PooledAttention, self-attention, 1 head(s)"]
    assert Lazy(find_panel("attention").tables)(HeadlessInput(named, "abc ab", ""))
    ids = torch.tensor([[1, 4, 5, 6, 12, 4]])
    with torch.no_grad():
        with capture(model, named="attn") as record:
            model(ids)
        x = model.tokens(ids) + model.positions(torch.arange(ids.shape[1]))  # (B, T, D)
        expected = torch.softmax(model.attn.scores(x), dim=-1)  # (B, T, T)
    assert torch.allclose(record.attention[0].weights[:, 0], expected, atol=1e-6)
