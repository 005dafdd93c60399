"""Ablation, head importance and activation patching (explorer.analysis.interventions) against
the model's own modules and direct forward passes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.analysis.ablation_means import validation_means
from explorer.analysis.activations import run_with
from explorer.analysis import interventions
from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.interventions import (
    ablate, ablation_effect, activation_patching, head_importance, head_means, patch_residual,
)
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                           d_model=16, num_heads=4, num_layers=2, d_ff=32, dropout=0.1, max_len=64)


@pytest.fixture(scope="module")
def gpt():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="brackets", n_train=32, n_val=4), "gpt", seed=0,
                           d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=64)


def _logits(model, item):
    model.eval()
    with torch.no_grad():
        return model(*item.inputs)


@pytest.mark.parametrize("layer, kind, module", [
    (1, "attn", lambda m: m.encoder_layers[1].self_attn.out_proj),
    (0, "cross_attn", lambda m: m.decoder_layers[0].multihead_attn.out_proj),
])
def test_ablating_every_head_of_a_layer_is_that_attention_output_zeroed(transformer, layer, kind, module):
    """All heads' outputs zero: the attention sub-layer outputs its projection's bias alone."""
    model = transformer.model
    item = attribution_input(transformer, "abcd", "dcba")
    stack = "encoder" if kind == "attn" else "decoder"
    heads = {f"{stack}.blocks.{layer}.{kind}.hook_z": [0, 1, 2, 3]}
    ablated = ablate(model, item, heads=heads).logits
    bias = module(model).bias.detach()
    out_name = f"{stack}.blocks.{layer}.hook_{'attn_out' if kind == 'attn' else 'cross_attn_out'}"
    model.eval()
    zeroed = run_with(model, item.inputs, replace={out_name: lambda v: torch.zeros_like(v) + bias}).logits
    torch.testing.assert_close(ablated, zeroed, rtol=0, atol=1e-6)


def test_ablate_then_undo_is_bit_identical(transformer):
    model = transformer.model
    model.train()  # the user's mode comes back too
    item = attribution_input(transformer, "abcd", "dcba")
    before = _logits(model, item)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    ablated = ablate(model, item, heads={"decoder.blocks.1.attn.hook_z": [2]}).logits
    assert model.training
    after = _logits(model, item)
    assert torch.equal(before, after) and not torch.equal(before, ablated)
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())


def test_mean_ablation_uses_the_heads_mean_output(transformer):
    model = transformer.model.eval()
    items = [attribution_input(transformer, s, t) for s, t in transformer.data.val]
    name = "encoder.blocks.0.attn.hook_z"
    means = head_means(model, items, [name])[name]
    values = torch.cat([run_with(model, i.inputs, read=[name]).values[name][0] for i in items])  # (N, H, Dh)
    torch.testing.assert_close(means, values.mean(0))
    effect = ablation_effect(transformer, "abcd", "dcba", heads={name: [1]}, mode="mean", means={name: means})
    assert effect.attention_change["encoder.blocks.0.attn.hook_pattern"] == 0.0  # its own weights stay
    assert effect.attention_change["decoder.blocks.1.cross_attn.hook_pattern"] > 0


def test_rnn_units_ablation_and_undo():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="copy", n_train=8, n_val=2), "seq2seq", seed=0,
                                cell="gru", embed_dim=8, hidden_size=12)
    item = attribution_input(workspace, "abc", "abc")
    before = _logits(workspace.model, item)
    effect = ablation_effect(workspace, "abc", "abc", units={"encoder.rnn.l0.fwd.hook_h": [0, 3, 5]})
    assert np.abs(effect.clean - effect.ablated).max() > 0
    np.testing.assert_allclose(effect.clean, before.log_softmax(-1)[0, range(4), item.inputs[1].new_tensor(
        [row.token_id for row in item.rows])].numpy(), atol=1e-5)
    assert torch.equal(before, _logits(workspace.model, item))


def test_head_importance_matches_one_ablation_at_a_time(transformer):
    item = attribution_input(transformer, "abcd", "dcba")
    importance = head_importance(transformer, "abcd", "dcba")
    assert importance.drop.shape == (6, 4)  # 2 encoder, 2 decoder self, 2 cross layers x 4 heads
    assert importance.layers[:4] == ["encoder layer 1", "encoder layer 2", "decoder layer 1",
                                     "decoder layer 1 cross"]
    base = transformer.model.eval()(*item.inputs).log_softmax(-1)
    total = sum(base[0, r.position, r.token_id] for r in item.rows).item()
    for layer, head in [(0, 1), (3, 2), (5, 0)]:
        name = importance.points[layer]
        logp = ablate(transformer.model, item, heads={name: [head]}).logits.log_softmax(-1)
        expected = total - sum(logp[0, r.position, r.token_id] for r in item.rows).item()
        assert importance.drop[layer, head] == pytest.approx(expected, abs=1e-4)


def test_head_importance_of_a_language_model_matches_one_ablation_at_a_time(gpt):
    """A one-stack model runs the layers below the ablated one once (batch 1): the same numbers."""
    text = "(()())"
    item = attribution_input(gpt, text)
    importance = head_importance(gpt, text)
    assert importance.drop.shape == (2, 2)
    _assert_drops_are_single_ablations(gpt.model, item, importance, abs=1e-4)


def test_head_importance_in_passes_of_several_layers_matches_one_ablation_at_a_time(monkeypatch):
    """A pass that holds two layers and starts above the bottom one (its layers below run at
    batch 1, then the batch grows at each ablated layer): the same numbers as ablating each
    head alone in its own full pass."""
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="brackets", n_train=8, n_val=2), "gpt", seed=0, d_model=16,
                                num_heads=2, num_layers=5, d_ff=32, dropout=0.0, max_len=64)
    text = "(()())"
    item = attribution_input(workspace, text)
    length = item.inputs[0].size(1)
    monkeypatch.setattr(interventions, "_BATCH_TOKENS", 5 * length)  # 5 rows: the clean one, 2 layers' heads
    importance = head_importance(workspace, text)
    assert importance.drop.shape == (5, 2)
    _assert_drops_are_single_ablations(workspace.model, item, importance, abs=1e-4)


def test_head_importance_of_a_masked_lm_matches_one_ablation_at_a_time(tmp_path):
    """Only the masked positions have rows, so only they reach the output layer: the same numbers."""
    from explorer.hf.loader import open_hf_model
    from tests.hf.builders import build_bert

    workspace = open_hf_model(build_bert(tmp_path / "bert"))
    text = "the [MASK] sat on [MASK] mat"
    item = attribution_input(workspace, text)
    assert len(item.rows) == 2 < item.inputs[0].size(1)
    importance = head_importance(workspace, text)
    assert np.abs(importance.drop).max() > 5e-4  # random weights: small drops, compared closely
    _assert_drops_are_single_ablations(workspace.model, item, importance, abs=2e-5)


@pytest.mark.parametrize("name", ["transformer", "gpt"])
def test_patching_every_position_recovers_the_clean_logits(name, request):
    workspace = request.getfixturevalue(name)
    clean_text, corrupted_text = ("abcd", "abdc") if name == "transformer" else ("(()())", "(())()")
    target = "dcba" if name == "transformer" else ""
    clean = attribution_input(workspace, clean_text, target)
    corrupted = attribution_input(workspace, corrupted_text, target)
    expected = _logits(workspace.model, clean)
    result = activation_patching(workspace, clean_text, corrupted_text, target)
    length = len(result.positions)
    stack = "encoder" if name == "transformer" else "decoder"
    assert result.layers == [f"{stack} layer {k + 1}" for k in range(2)]
    for k in range(2):
        patched = patch_residual(workspace.model, clean, corrupted, f"{stack}.blocks.{k}.hook_resid_pre",
                                 [list(range(length))])
        torch.testing.assert_close(patched, expected, rtol=0, atol=1e-6)
    assert result.recovered.shape == (len(result.layers), length)
    # a position the runs share carries nothing at the bottom layer: patching it changes nothing
    same = [t for t in range(length) if clean.inputs[0][0, t] == corrupted.inputs[0][0, t]]
    patched = patch_residual(workspace.model, clean, corrupted, f"{stack}.blocks.0.hook_resid_pre",
                             [[t] for t in same])
    torch.testing.assert_close(patched, _logits(workspace.model, corrupted).expand_as(patched),
                               rtol=0, atol=1e-5)


def test_corrupted_input_of_another_length_is_one_line(transformer):
    with pytest.raises(UserError, match="same length in tokens") as caught:
        activation_patching(transformer, "abcd", "abcde", "dcba")
    assert "\n" not in str(caught.value)


def _assert_drops_are_single_ablations(model, item, importance, abs: float) -> None:
    """Each head's drop equals the summed log p of the output tokens lost when that head alone is
    ablated in its own full pass (`ablate`): the reference."""
    base = model.eval()(*item.inputs).log_softmax(-1)
    total = sum(base[0, r.position, r.token_id] for r in item.rows).item()
    for layer, point in enumerate(importance.points):
        for head in range(importance.heads):
            logp = ablate(model, item, heads={point: [head]}).logits.log_softmax(-1)
            expected = total - sum(logp[0, r.position, r.token_id] for r in item.rows).item()
            assert importance.drop[layer, head] == pytest.approx(expected, abs=abs)


def _out_proj_inputs(model, items, projection):
    """Brute force: what the attention's output projection reads, (positions, H * Dh), over items."""
    seen = []
    handle = projection.register_forward_pre_hook(lambda _m, args: seen.append(args[0].flatten(0, 1)))
    model.eval()
    with torch.no_grad():
        for item in items:
            model(*item.inputs)
    handle.remove()
    return torch.cat(seen)


def test_mean_ablation_over_the_validation_data_equals_a_hand_written_hook(transformer):
    """The head's output set to its mean over every validation position, as a forward pre-hook on
    the output projection does it; undo is the model as it was, bit for bit."""
    model, head, heads = transformer.model, 2, 4
    projection = model.decoder_layers[1].self_attn.out_proj
    items = [attribution_input(transformer, s, t) for s, t in transformer.data.val]
    mean = _out_proj_inputs(model, items, projection).view(-1, heads, 4).mean(0)  # (H, Dh)
    means = validation_means(transformer)
    name = "decoder.blocks.1.attn.hook_z"
    torch.testing.assert_close(means[name], mean)
    assert set(means) >= {"encoder.blocks.0.attn.hook_z", "decoder.blocks.0.cross_attn.hook_z"}

    def set_head_to_mean(_module, args):
        z = args[0].clone().view(*args[0].shape[:2], heads, 4)  # (B, T, H, Dh)
        z[:, :, head] = mean[head]
        return (z.flatten(2),)

    item = attribution_input(transformer, "abcd", "dcba")
    before = _logits(model, item)
    handle = projection.register_forward_pre_hook(set_head_to_mean)
    expected = _logits(model, item)
    handle.remove()
    ablated = ablate(model, item, heads={name: [head]}, mode="mean", means=means).logits
    torch.testing.assert_close(ablated, expected, rtol=0, atol=1e-5)
    assert not torch.allclose(ablated, before)
    assert torch.equal(_logits(model, item), before)


def test_validation_means_are_cached_until_a_weight_changes(transformer):
    first = validation_means(transformer)
    assert validation_means(transformer) is first
    weight = transformer.model.decoder_layers[0].linear1.weight
    kept = weight.detach().clone()
    with torch.no_grad():
        weight.add_(torch.randn_like(weight))  # in place, as an optimizer step writes
    try:
        again = validation_means(transformer)
    finally:
        with torch.no_grad():
            weight.copy_(kept)
    assert again is not first
    assert not torch.allclose(again["decoder.blocks.1.attn.hook_z"], first["decoder.blocks.1.attn.hook_z"])


def test_rnn_units_mean_ablation_uses_the_validation_mean_and_undoes():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="copy", n_train=8, n_val=3), "seq2seq", seed=0,
                                cell="gru", embed_dim=8, hidden_size=12)
    model = workspace.model
    items = [attribution_input(workspace, s, t) for s, t in workspace.data.val]
    outputs = []
    handle = model.encoder.register_forward_hook(lambda _m, _a, out: outputs.append(out[0][0, :, :12]))
    for item in items:
        _logits(model, item)
    handle.remove()
    means = validation_means(workspace)
    name = "encoder.rnn.l0.fwd.hook_h"
    torch.testing.assert_close(means[name], torch.cat(outputs).mean(0))  # the forward direction's h
    item = attribution_input(workspace, "abc", "abc")
    before = _logits(model, item)
    zeroed = ablate(model, item, units={name: [0, 3]}).logits
    mean_ablated = ablate(model, item, units={name: [0, 3]}, mode="mean", means=means).logits
    assert not torch.allclose(zeroed, mean_ablated) and not torch.allclose(before, mean_ablated)
    assert torch.equal(_logits(model, item), before)


def test_mean_ablation_without_validation_data_is_one_line(transformer):
    import copy

    bare = copy.copy(transformer)
    bare.data = None
    with pytest.raises(UserError, match="no validation data|none loaded") as caught:
        validation_means(bare)
    assert "\n" not in str(caught.value)
