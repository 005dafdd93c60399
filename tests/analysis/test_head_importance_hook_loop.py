"""Head importance against the loop a TransformerLens user writes: one forward pass per head, a
pre-hook on the attention's output projection zeroing that head's slice of its input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.interventions import head_importance


def test_head_importance_equals_one_ablated_forward_pass_per_head():
    transformers = pytest.importorskip("transformers")
    from explorer.data.tokenizers import WordTokenizer
    from explorer.hf.adapter import HFCausalLM, HFModelConfig
    from explorer.workspace import Workspace

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=3, n_head=4, n_embd=32, vocab_size=64, n_positions=64)
    hf = transformers.GPT2LMHeadModel(config).eval()
    model = HFCausalLM(hf, HFModelConfig("hf-causal-lm", "gpt2", 64, 64, 64, 63, 63, 63))
    text = "the quick brown fox jumps over the lazy dog"
    workspace = Workspace(model, WordTokenizer.train([text]), None)
    ours = head_importance(workspace, text).drop  # (layers, heads)

    item = attribution_input(workspace, text)
    ids = item.inputs[0]
    positions = [row.position for row in item.rows]
    tokens = [row.token_id for row in item.rows]
    width = config.n_embd // config.n_head

    def summed_log_p() -> float:
        logits = hf(ids).logits  # (1, T, V)
        return float(logits[0, positions].log_softmax(-1)[range(len(tokens)), tokens].sum())

    expected = np.zeros((config.n_layer, config.n_head))
    with torch.no_grad():
        clean = summed_log_p()
        for layer, block in enumerate(hf.transformer.h):
            for head in range(config.n_head):
                def zero(module, args, head=head):
                    x = args[0].clone()
                    x[..., head * width:(head + 1) * width] = 0.0
                    return (x,)

                handle = block.attn.c_proj.register_forward_pre_hook(zero)
                try:
                    expected[layer, head] = clean - summed_log_p()
                finally:
                    handle.remove()
    assert np.abs(expected).max() > 1e-3  # the heads matter: a zero map would match anything
    np.testing.assert_allclose(ours, expected, atol=1e-4)
