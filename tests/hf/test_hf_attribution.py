"""Attribution on Hugging Face models opened from folders: tiny random GPT-2 and Marian against
Captum, T5's source side on the encoder's input, BERT at a masked position."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from explorer.analysis.attribution import AttributionSettings, attribute, attribute_item
from explorer.analysis.attribution_input import attribution_input
from tests.attribution_reference import assert_matches_captum

pytest.importorskip("captum")

SOURCE, TARGET = "the cat sat on the mat", "die katze sitzt auf der matte"


def _untied(model):
    """The same Marian with the decoder's embedding a separate copy of the shared table, so that
    Captum's layer hooks see each side once (its LayerIntegratedGradients hooks a module, not a call)."""
    model = copy.deepcopy(model)
    model.hf.model.decoder.embed_tokens = copy.deepcopy(model.hf.model.encoder.embed_tokens)
    return model


@pytest.mark.parametrize("method", ["saliency", "grad-input", "ig"])
def test_gpt2_matches_captum(hf_workspace, method):
    workspace = hf_workspace("gpt2")
    item = attribution_input(workspace, SOURCE)
    item.rows = [item.rows[0], item.rows[-1]]
    settings = AttributionSettings(method=method, steps=16, batch_size=5)
    result = attribute_item(workspace.model, item, settings)
    pad = workspace.model.config.pad_id
    baselines = [torch.full_like(item.inputs[0], pad)]
    assert_matches_captum(result, workspace.model, item.inputs, [workspace.model.hf.transformer.wte],
                          item.rows, method, baselines=baselines, steps=16, batch_size=5)


@pytest.mark.parametrize("method", ["saliency", "grad-input", "ig"])
def test_marian_matches_captum_source_on_the_encoder(hf_workspace, method):
    shared = hf_workspace("marian")
    untied = _untied(shared.model)
    settings = AttributionSettings(method=method, steps=16, batch_size=8)
    item = attribution_input(shared, SOURCE, TARGET)
    item.rows = item.rows[1:3]
    assert [side.name for side in item.sides] == ["source", "prefix"]
    assert item.sides[0].modules == item.sides[1].modules  # one table, read by both stacks
    on_shared = attribute_item(shared.model, item, settings)
    hf = untied.hf.model
    item.sides[0].modules, item.sides[1].modules = (hf.encoder.embed_tokens,), (hf.decoder.embed_tokens,)
    on_untied = attribute_item(untied, item, settings)
    np.testing.assert_allclose(on_shared.scores, on_untied.scores, atol=1e-6)
    assert on_shared.sides[0][1] == shared.tokenizer.tokens(shared.tokenizer.encode(SOURCE))
    pad = untied.config.pad_id
    baselines = [torch.full_like(t, pad) for t in item.inputs]
    assert_matches_captum(on_untied, untied, item.inputs, [hf.encoder.embed_tokens, hf.decoder.embed_tokens],
                          item.rows, method, baselines=baselines, steps=16, batch_size=8)


@pytest.mark.parametrize("name", ["gpt2", "marian"])
def test_completeness_gap_below_one_percent_at_300_steps(hf_workspace, name):
    workspace = hf_workspace(name)
    result = attribute(workspace, SOURCE, TARGET if name == "marian" else "",
                       AttributionSettings(method="ig", steps=300, batch_size=150), rows=[1])
    change = abs(result.target[0] - result.baseline_target[0])
    assert change > 1e-4
    assert abs(result.gap[0]) < 0.01 * change


def test_t5_source_is_the_encoder_input(hf_workspace):
    """Occluding a source column changes exactly what replacing that encoder token does."""
    workspace = hf_workspace("t5")
    model = workspace.model.eval()
    result = attribute(workspace, "the cat sat", "die katze",
                       AttributionSettings(method="occlusion", baseline="unk"), rows=[0])
    item = attribution_input(workspace, "the cat sat", "die katze")
    src, tgt = item.inputs
    row = item.rows[0]
    unk = workspace.tokenizer.hf.unk_token_id
    with torch.no_grad():
        full = model(src, tgt)[0, row.position].log_softmax(-1)[row.token_id].item()
        for j in range(src.size(1)):
            changed = src.clone()
            changed[0, j] = unk
            occluded = model(changed, tgt)[0, row.position].log_softmax(-1)[row.token_id].item()
            assert result.scores[0, j] == pytest.approx(full - occluded, abs=1e-5)


def test_bert_explains_what_it_fills_in_at_the_mask(hf_workspace):
    workspace = hf_workspace("bert")
    result = attribute(workspace, "the cat [MASK] on the mat", "",
                       AttributionSettings(method="ig", steps=64, batch_size=32))
    tokens = result.sides[0][1]
    assert len(result.rows) == 1 and tokens[result.positions[0]] == "[MASK]"
    with torch.no_grad():
        ids = torch.tensor([workspace.tokenizer.encode("the cat [MASK] on the mat")])
        best = workspace.model(ids)[0, result.positions[0]].argmax().item()
    assert result.rows[0] == workspace.tokenizer.tokens([best])[0]
    assert abs(result.gap[0]) < 0.05 * abs(result.target[0] - result.baseline_target[0])


@pytest.mark.parametrize("name, stacks", [("gpt2", ["decoder"]), ("marian", ["encoder", "decoder", "decoder → source"]),
                                          ("bert", ["encoder"])])
def test_rollout_on_hf_models(hf_workspace, name, stacks):
    from explorer.analysis.rollout import rollout, rollout_stack

    workspace = hf_workspace(name)
    result = rollout(workspace, SOURCE, TARGET if name == "marian" else "", "max")
    assert [m.name for m in result.maps] == stacks
    for m in result.maps:
        np.testing.assert_allclose(m.matrix.sum(1), 1.0, atol=1e-6)
    item = attribution_input(workspace, SOURCE, TARGET if name == "marian" else "")
    with torch.no_grad():
        _, trace = workspace.model.eval()(*item.inputs, trace=True)
    kind = "decoder" if name == "gpt2" else "encoder"
    layers = [m.weights[0].numpy() for m in trace.attention_of(kind)]
    np.testing.assert_allclose(result.maps[0].matrix, rollout_stack(layers, "max"), atol=1e-6)


@pytest.mark.parametrize("name, stacks", [("gpt2", ["decoder"]), ("marian", ["encoder", "decoder"])])
def test_attention_flow_on_hf_models(hf_workspace, name, stacks):
    """Flow of a Hugging Face model's own attentions (its output_attentions): one layer's row is
    that layer's residual-added attention; every row sums to 1; a causal stack flows backwards only."""
    from explorer.analysis.attention_flow import attention_flow, flow_stack
    from explorer.analysis.rollout import residual_attention

    workspace = hf_workspace(name)
    target = TARGET if name == "marian" else ""
    result = attention_flow(workspace, SOURCE, target, "mean")
    assert [m.name for m in result.maps] == stacks and (result.note is not None) == (name == "marian")
    for m in result.maps:
        assert (m.matrix >= 0).all()
        np.testing.assert_allclose(m.matrix.sum(1), 1.0, atol=1e-6)
    item = attribution_input(workspace, SOURCE, target)
    with torch.no_grad():
        _, trace = workspace.model.eval()(*item.inputs, trace=True)
    layers = [m.weights[0].double().numpy() for m in trace.attention_of(stacks[0])]
    np.testing.assert_allclose(result.maps[0].matrix, flow_stack(layers), atol=1e-6)
    np.testing.assert_allclose(flow_stack(layers[:1]), residual_attention(layers[0]), atol=1e-9)
    if name == "gpt2":
        assert np.all(np.triu(result.maps[0].matrix, 1) < 1e-9)
