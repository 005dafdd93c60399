"""Gradient norm per layer of Hugging Face models, against autograd on transformers' own outputs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from explorer.analysis.param_gradients import layer_group  # noqa: E402
from explorer.analysis.probe import probe  # noqa: E402

SOURCE, TARGET = "the cat sat on the mat", "die katze sitzt"
# each model's layer prefixes, written out by hand (not the module's name parsing)
LAYERS = {
    "gpt2": [("layer0", "transformer.h.0."), ("layer1", "transformer.h.1.")],
    "bert": [("encoder.layer0", "bert.encoder.layer.0."), ("encoder.layer1", "bert.encoder.layer.1.")],
    "marian": [("encoder.layer0", "model.encoder.layers.0."), ("encoder.layer1", "model.encoder.layers.1."),
               ("decoder.layer0", "model.decoder.layers.0."), ("decoder.layer1", "model.decoder.layers.1.")],
    "t5": [("encoder.layer0", "encoder.block.0."), ("encoder.layer1", "encoder.block.1."),
           ("decoder.layer0", "decoder.block.0."), ("decoder.layer1", "decoder.block.1.")],
}


def direct_loss_and_states(workspace):
    """The probe's loss computed from transformers' own forward (eager attention, no dropout)."""
    hf, tokenizer = workspace.model.hf, workspace.tokenizer
    hf.set_attn_implementation("eager")
    try:
        if workspace.family == "hf-seq2seq":
            src = tokenizer.encode(SOURCE)
            tgt_out = tokenizer.encode_target(TARGET)
            tgt_in = [workspace.model.config.start_id] + tgt_out[:-1]
            out = hf(input_ids=torch.tensor([src]), decoder_input_ids=torch.tensor([tgt_in]),
                     output_hidden_states=True)
            targets = tgt_out
            states = out.encoder_hidden_states[1:] + out.decoder_hidden_states[1:]
        else:
            ids = tokenizer.encode(SOURCE)
            # a causal LM reads every token; the last has no next token (-100: ignored)
            inputs, targets = (ids, ids[1:] + [-100]) if workspace.family == "hf-causal-lm" else (ids, ids)
            out = hf(input_ids=torch.tensor([inputs]), output_hidden_states=True)
            states = out.hidden_states[1:]
        loss = F.cross_entropy(out.logits[0], torch.tensor(targets))
    finally:
        hf.set_attn_implementation("sdpa")
    return loss, states


@pytest.mark.parametrize("name", ["gpt2", "bert", "marian", "t5"])
def test_gradient_norm_per_layer_is_autograd_on_the_models_own_forward(hf_workspace, name):
    workspace = hf_workspace(name)
    snapshot = probe(workspace, SOURCE, TARGET)
    hf = workspace.model.hf
    with torch.enable_grad():
        loss, states = direct_loss_and_states(workspace)
        # trainable ones: Marian's sinusoidal tables are fixed (explorer.hf.loader)
        params = {n: p for n, p in hf.named_parameters() if p.requires_grad}
        grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()), allow_unused=True,
                                                     retain_graph=True)))
        block_grads = torch.autograd.grad(loss, list(states))
    by_group = dict(zip(snapshot.grad_params_labels, snapshot.grad_params))
    for group, prefix in LAYERS[name]:
        expected = torch.sqrt(sum(g.double().pow(2).sum() for n, g in grads.items()
                                  if n.startswith(prefix) and g is not None))
        assert by_group[group] == pytest.approx(float(expected), rel=1e-5), group
    # every trainable parameter is in exactly one group, and the groups' squares add up to the whole
    total = torch.sqrt(sum(g.double().pow(2).sum() for g in grads.values() if g is not None))
    assert np.sqrt(np.sum(snapshot.grad_params ** 2)) == pytest.approx(float(total), rel=1e-5)
    assert snapshot.grad_params_labels[0] == "embeddings"
    order = [g for g, _ in LAYERS[name]]  # bottom to top, then the head (Marian's is tied: none)
    assert [g for g in snapshot.grad_params_labels if g in order] == order
    assert snapshot.grad_params_labels[-1] in ("output & other", order[-1])
    # the depth plot: ||dL/d(block output)|| per block, the model's own hidden_states
    expected_depth = [float(g.norm()) for g in block_grads]
    np.testing.assert_allclose(snapshot.grad_depth, expected_depth, rtol=1e-5)
    # the trainer's .grad is never touched
    assert all(p.grad is None for p in hf.parameters())


def test_layer_groups_of_our_own_and_hf_names():
    assert layer_group("transformer.h.11.attn.c_attn.weight") == "layer11"
    assert layer_group("model.decoder.layers.3.fc1.bias") == "decoder.layer3"
    assert layer_group("encoder_layers.0.linear1.weight") == "encoder.layer0"
    assert layer_group("rnn.weight_hh_l1") == "layer1"
    assert layer_group("encoder.weight_ih_l0_reverse") == "encoder.layer0"
    assert layer_group("transformer.wte.weight") == "embeddings"
    assert layer_group("shared.weight") == "embeddings"
    assert layer_group("lm_head.weight") == "output & other"
