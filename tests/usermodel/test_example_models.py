"""The example models in models/: plain files (not a package, never installed), each opened by
`explorer check` with everything it can show shown, its attention and states where it holds them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from explorer.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


@pytest.mark.parametrize("name, expected", [
    ("gru_translator", ["decoder.attention: nn.MultiheadAttention, cross-attention, 1 head(s)",
                        "encoder.gru: nn.GRU, 1 layer(s); hidden states and gates recorded"]),
    ("char_gpt", ["h.0.attn: F.scaled_dot_product_attention in CausalSelfAttention, "
                  "self-attention, 4 head(s)", "h.1.attn: F.scaled_dot_product_attention"]),
    ("lstm_lm", ["rnn: nn.LSTM, 2 layer(s); hidden states and gates recorded"]),
])
def test_each_example_model_checks_clean(name, expected, capsys):
    assert main(["check", "--model", f"{MODELS / name}.py:build"]) == 0
    out = capsys.readouterr().out
    for text in expected:
        assert text in out, out
    assert out.rstrip().endswith("exit 0: everything this model can show is shown")


def test_models_is_a_folder_of_plain_files_not_a_package():
    assert not (MODELS / "__init__.py").exists()
    setup = ast.parse((ROOT / "setup.py").read_text())
    included = [node.value for node in ast.walk(setup) if isinstance(node, ast.Constant)
                and isinstance(node.value, str) and node.value.endswith("*")]
    assert included == ["explorer*", "seqmodels*"]  # find_packages never picks up models/
    from setuptools import find_packages

    assert not any(p.split(".")[0] == "models" for p in find_packages(str(ROOT), include=included))
