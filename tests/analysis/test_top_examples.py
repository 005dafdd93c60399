"""Top examples of a unit or head against a brute-force loop: every example alone, through the
model's own traced forward pass (no activation points, no padding), the activity computed by its
definition and the examples ranked by hand."""

import numpy as np
import pytest
import torch

from explorer.analysis.top_examples import (
    ActivityQuery,
    attention_points,
    point_of_layer,
    top_examples,
)
from explorer.decoding.scoring import encode_context
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace
from seqmodels.config import BOS_ID


def _traced(workspace, source, reference):
    model = workspace.model
    model.eval()
    with torch.no_grad():
        if workspace.is_seq2seq:
            src = torch.tensor([encode_context(workspace, source)])  # (1, S)
            tgt = torch.tensor([[BOS_ID] + workspace.tokenizer.encode(reference)])  # (1, T)
            return model(src, tgt, trace=True)[-1]
        tokens = torch.tensor([[BOS_ID] + workspace.tokenizer.encode(source)])  # (1, T)
        return model(tokens, trace=True)[-1]


def _brute_force(workspace, pairs, trace_name=None, attention=None, index=0, k=5):
    """(rows, peaks) ranked by hand; `trace_name` a unit's layer, `attention` (kind, layer)."""
    peaks = []
    for source, reference in pairs:
        trace = _traced(workspace, source, reference)
        if trace_name is not None:
            steps = trace.hidden[trace_name]
            states = steps[0] if len(steps) == 1 and steps[0].dim() == 3 else torch.stack(steps, dim=1)
            activity = states[0, :, index].abs()  # (T,)
        else:
            weights = next(m.weights for m in trace.attention if (m.kind, m.layer) == attention)
            activity = weights[0, index, :, 1:].max(dim=-1).values  # (Tq,)
        peaks.append(float(activity.max()))
    order = sorted(range(len(pairs)), key=lambda i: (-peaks[i], i))[:k]
    return order, [peaks[i] for i in order]


def _check(workspace, pairs, query, **reference):
    found = top_examples(workspace, pairs, query, k=5, batch_size=6)
    rows, peaks = _brute_force(workspace, pairs, index=query.index, **reference)
    assert list(found.rows) == rows
    np.testing.assert_allclose(found.activity, peaks, rtol=1e-4, atol=1e-6)
    return found


@pytest.fixture(scope="module")
def gru():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=20), "seq2seq", preset="tiny",
                           cell="gru", attention="dot", embed_dim=16, hidden_size=16)


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=20), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=64)


def test_rnn_units_and_alignment_match_brute_force(gru):
    pairs = gru.data.val
    for name in ("encoder.l0", "decoder.l0"):
        found = _check(gru, pairs, ActivityQuery((point_of_layer(name),), 3, name), trace_name=name)
        assert found.keys == [""] * 5
    found = _check(gru, pairs, ActivityQuery(attention_points("cross", 0), 0, "alignment"),
                   attention=("cross", 0))
    assert found.point == "decoder.cross_attn.hook_pattern"


def test_transformer_heads_and_block_outputs_match_brute_force(transformer):
    pairs = transformer.data.val
    for kind in ("encoder", "decoder", "cross"):
        _check(transformer, pairs, ActivityQuery(attention_points(kind, 1), 1, kind), attention=(kind, 1))
    _check(transformer, pairs, ActivityQuery((point_of_layer("decoder.layer0"),), 7, "dim 7"),
           trace_name="decoder.layer0")


def test_language_model_head_matches_brute_force():
    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="brackets", n_train=16, n_val=12), "gpt", seed=0)
    _check(workspace, workspace.data.val, ActivityQuery(attention_points("decoder", 0), 2, "head 3"),
           attention=("decoder", 0))


def test_snippet_shows_the_peak_in_its_context(gru):
    pairs = gru.data.val
    found = top_examples(gru, pairs, ActivityQuery(attention_points("cross", 0), 0, "a"), k=3, context=2)
    for i, row in enumerate(found.rows):
        source, reference = pairs[row]
        tokens = ["<bos>"] + list(reference)  # the decoder's side: a char tokenizer's tokens
        t = found.positions[i]
        assert found.peak[i] == tokens[t]
        assert found.before[i] == " ".join(tokens[max(0, t - 2):t])
        assert found.keys[i] in list(source) + ["<eos>"]
        # the key the activity comes from: the heaviest but the first, at the peak
        src = torch.tensor([encode_context(gru, source)])  # (1, S)
        tgt = torch.tensor([[BOS_ID] + gru.tokenizer.encode(reference)])  # (1, T)
        with torch.no_grad():
            weights = gru.model(src, tgt, trace=True)[-1].attention[0].weights[0, 0, t]  # (S,)
        key = int(weights[1:].argmax()) + 1
        assert found.keys[i] == gru.tokenizer.tokens([int(src[0, key])])[0]


def test_bad_queries_and_stopping(gru):
    pairs = gru.data.val
    with pytest.raises(UserError, match="no activation point"):
        top_examples(gru, pairs, ActivityQuery(("encoder.blocks.9.attn.hook_pattern",), 0, "x"))
    with pytest.raises(UserError, match="unit 99 does not exist"):
        top_examples(gru, pairs, ActivityQuery((point_of_layer("encoder.l0"),), 99, "x"))
    with pytest.raises(UserError, match="no examples"):
        top_examples(gru, [], ActivityQuery((point_of_layer("encoder.l0"),), 0, "x"))
    seen = []
    assert top_examples(gru, pairs, ActivityQuery((point_of_layer("encoder.l0"),), 0, "x"), batch_size=4,
                        progress=lambda done, total: seen.append(done),
                        should_stop=lambda: len(seen) >= 2) is None
    assert seen == [4, 8]


def test_layer_names_map_to_points():
    assert point_of_layer("lm.l0") == "lm.rnn.l0.fwd.hook_h"
    assert point_of_layer("encoder.l1_reverse", "c") == "encoder.rnn.l1.bwd.hook_c"
    assert point_of_layer("decoder.l0", "z") == "decoder.rnn.l0.fwd.hook_gate_z"
    assert point_of_layer("decoder.layer1") == "decoder.blocks.1.hook_resid_post"
    assert point_of_layer("embed") is None
