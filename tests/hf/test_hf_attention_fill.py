"""Attention maps of Hugging Face models, and fill-mask, against transformers' own outputs."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from explorer.decoding import greedy  # noqa: E402
from explorer.decoding.fill import fill_mask  # noqa: E402
from explorer.decoding.scoring import encode_context, forward_attention  # noqa: E402
from explorer.errors import UserError  # noqa: E402


def eager_reference(workspace, **inputs):
    """transformers' own output_attentions, from the same weights in the eager implementation."""
    hf = workspace.model.hf
    hf.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            return hf(**inputs, output_attentions=True)
    finally:
        hf.set_attn_implementation("sdpa")


def test_causal_attention_maps(hf_workspace):
    workspace = hf_workspace("gpt2")
    context = encode_context(workspace, "the cat sat on the mat")
    target = greedy(workspace.model, context, max_len=4, tokenizer=workspace.tokenizer).token_ids
    snapshots = forward_attention(workspace, context, target)
    fed = context + target[:-1]
    reference = eager_reference(workspace, input_ids=torch.tensor([fed])).attentions
    assert [(s.kind, s.layer) for s in snapshots] == [("decoder", 0), ("decoder", 1)]
    for snapshot, expected in zip(snapshots, reference):
        assert snapshot.weights.shape == (4, len(fed), len(fed))  # (H, Tq, Tk)
        np.testing.assert_allclose(snapshot.weights, expected[0].numpy(), atol=1e-6)
        assert snapshot.rows == workspace.tokenizer.tokens(fed) == snapshot.cols
    assert workspace.model.hf.config._attn_implementation == "sdpa"  # fused again afterwards


def test_seq2seq_attention_maps_and_step_cross_attention(hf_workspace):
    workspace = hf_workspace("marian")
    context = encode_context(workspace, "the cat sat on the mat")
    hypothesis = greedy(workspace.model, context, max_len=5, tokenizer=workspace.tokenizer)
    target = hypothesis.token_ids
    snapshots = forward_attention(workspace, context, target)
    decoder_in = [workspace.model.config.start_id] + target[:-1]
    reference = eager_reference(workspace, input_ids=torch.tensor([context]),
                                decoder_input_ids=torch.tensor([decoder_in]))
    expected = {"encoder": reference.encoder_attentions, "decoder": reference.decoder_attentions,
                "cross": reference.cross_attentions}
    assert sorted({s.kind for s in snapshots}) == ["cross", "decoder", "encoder"]
    for snapshot in snapshots:
        np.testing.assert_allclose(snapshot.weights, expected[snapshot.kind][snapshot.layer][0].numpy(),
                                   atol=1e-6)
    cross = [s for s in snapshots if s.kind == "cross"]
    assert cross[0].rows == workspace.tokenizer.tokens(target)
    assert cross[0].cols == workspace.tokenizer.tokens(context)
    # the cross-attention each greedy step reports is the teacher-forced map's row
    for position, step_attention in enumerate(hypothesis.attention):  # (L, H, S)
        for layer, snapshot in enumerate(cross):
            np.testing.assert_allclose(step_attention[layer], snapshot.weights[:, position], atol=1e-5)


@pytest.mark.parametrize("name", ["bert", "distilbert"])
def test_fill_mask_is_the_top_of_the_logits(hf_workspace, name):
    workspace = hf_workspace(name)
    result = fill_mask(workspace, "the [MASK] sat on the [MASK]", top_k=5)
    ids = workspace.tokenizer.hf("the [MASK] sat on the [MASK]")["input_ids"]
    assert result.token_ids == ids and result.mask_token == "[MASK]"
    with torch.no_grad():
        logits = workspace.model.hf(input_ids=torch.tensor([ids])).logits[0]
    probs = F.softmax(logits.double(), -1)
    mask_id = workspace.tokenizer.hf.mask_token_id
    assert [m.position for m in result.masks] == [i for i, t in enumerate(ids) if t == mask_id]
    for mask in result.masks:
        values, best = probs[mask.position].topk(5)
        assert [p.token_id for p in mask.predictions] == best.tolist()
        assert [p.prob for p in mask.predictions] == pytest.approx(values.tolist(), abs=1e-9)
        assert mask.attention.shape == (2, 4, len(ids))  # (L, H, T)
        assert mask.attention.sum(-1) == pytest.approx(np.ones((2, 4)), abs=1e-5)


def test_fill_mask_on_our_own_bert():
    from seqmodels.config import MASK_ID
    from tests.training.conftest import make_tiny_workspace

    workspace = make_tiny_workspace("bert")
    result = fill_mask(workspace, "(([MASK]))<mask>", top_k=3)
    ids = workspace.tokenizer.encode("((") + [MASK_ID] + workspace.tokenizer.encode("))") + [MASK_ID]
    assert result.token_ids == ids
    workspace.model.eval()
    with torch.no_grad():
        logits = workspace.model(torch.tensor([ids]))[0]
    for mask in result.masks:
        assert [p.token_id for p in mask.predictions] == logits[mask.position].topk(3).indices.tolist()


def test_fill_refuses_other_models(hf_workspace):
    with pytest.raises(UserError, match="masked language model"):
        fill_mask(hf_workspace("gpt2"), "the [MASK] sat")
    with pytest.raises(UserError, match="no mask"):
        fill_mask(hf_workspace("bert"), "the cat sat")


@pytest.mark.parametrize("name", ["gpt2", "marian", "bert"])
def test_probe_of_hf_models(hf_workspace, name):
    """The attention panel's probe: HF attention maps labelled by the tokenizer, gradient per layer."""
    from explorer.analysis.probe import probe

    workspace = hf_workspace(name)
    snapshot = probe(workspace, "the cat sat on the mat", "der hund")
    kinds = {"gpt2": {"decoder"}, "marian": {"encoder", "decoder", "cross"}, "bert": {"encoder"}}[name]
    assert {a.kind for a in snapshot.attention} == kinds
    for attention in snapshot.attention:
        assert attention.weights.shape[1:] == (len(attention.rows), len(attention.cols))
        np.testing.assert_allclose(attention.weights.sum(-1), 1.0, atol=1e-5)
    if name == "marian":
        cross = next(a for a in snapshot.attention if a.kind == "cross")
        assert cross.cols == workspace.tokenizer.tokens(workspace.tokenizer.encode("the cat sat on the mat"))
        assert cross.rows == workspace.tokenizer.tokens(workspace.tokenizer.encode_target("der hund"))
    layers = 4 if name == "marian" else 2  # gradient norm per block (encoder and decoder stacks)
    assert len(snapshot.grad_depth) == layers and np.all(np.asarray(snapshot.grad_depth) > 0)
