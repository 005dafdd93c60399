"""The architecture diagram of Hugging Face models (tiny GPT-2 and T5): its shapes are what
forward hooks record on the same model and input."""

from __future__ import annotations

import pytest

from explorer.analysis.architecture import layout_blocks, trace_workspace
from tests.analysis.test_model_diagram import check_against_hooks, probe_inputs


@pytest.mark.parametrize("name", ["gpt2", "t5"])
def test_hf_shapes_equal_forward_hooks(hf_workspace, name):
    workspace = hf_workspace(name)
    check_against_hooks(workspace.model, probe_inputs(workspace))
    trace = trace_workspace(workspace, "the cat sat", "the cat")
    assert any(block.count > 1 and block.foldable for block in layout_blocks(trace))
