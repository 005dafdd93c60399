"""Neighbours by encoder and decoder state: a training example's nearest is itself, the order
matches brute force, and the states are what the models compute (mean-pooled encoder output,
an RNN's final state)."""

import numpy as np
import pytest
import torch

from explorer.analysis.neighbours import build_index, nearest, state_vectors
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace

FAMILIES = {
    "transformer": dict(d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0),
    "seq2seq": dict(cell="gru", attention="additive", hidden_size=16, embed_dim=16, dropout=0.0),
}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def workspace(request):
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=40, n_val=4), request.param, seed=0,
                           **FAMILIES[request.param])


def _brute_force(workspace, pairs, vector, kind, step=None):
    rows = [state_vectors(workspace, [pair], kind, step) for pair in pairs]  # one at a time
    keep = [i for i, (_, kept) in enumerate(rows) if kept[0]]
    distances = np.array([np.linalg.norm(rows[i][0][0] - vector) for i in keep])
    return np.array(keep)[np.argsort(distances, kind="stable")], np.sort(distances)


@pytest.mark.parametrize("kind, step", [("encoder", None), ("decoder", 2)])
def test_nearest_is_itself_and_matches_brute_force(workspace, kind, step):
    pairs = workspace.data.train
    index = build_index(workspace, pairs, kind, step, batch_size=16)
    for i in (0, 17):
        if kind == "decoder" and len(pairs[i][1]) < step:
            continue
        found = nearest(workspace, index, *pairs[i], k=5)
        assert found[0].index == i and found[0].distance == pytest.approx(0.0, abs=1e-4)
        vector = state_vectors(workspace, [pairs[i]], kind, step)[0][0]
        want_rows, want_distances = _brute_force(workspace, pairs, vector, kind, step)
        assert [n.distance for n in found] == pytest.approx(want_distances[:5], abs=1e-4)
        assert {n.index for n in found[1:]} <= set(want_rows[:8])  # ties in float order aside


def test_transformer_state_is_the_mean_of_the_encoder_output():
    torch.manual_seed(0)
    ws = build_workspace(DataSpec(task="reverse", n_train=8, n_val=2), "transformer", seed=0,
                         **FAMILIES["transformer"])
    from explorer.decoding import encode_context

    source = ws.data.train[3][0]
    src = torch.tensor([encode_context(ws, source)])
    ws.model.eval()
    with torch.no_grad():
        memory = ws.model.encode(src)  # (1, S, D)
    vector, _ = state_vectors(ws, [ws.data.train[3]], "encoder")
    assert vector[0] == pytest.approx(memory[0].mean(0).numpy(), abs=1e-5)


def test_rnn_state_is_the_final_state_of_both_directions():
    torch.manual_seed(0)
    ws = build_workspace(DataSpec(task="reverse", n_train=8, n_val=2), "seq2seq", seed=0,
                         bidirectional_encoder=True, **FAMILIES["seq2seq"])
    from explorer.decoding import encode_context

    model = ws.model.eval()
    ids = encode_context(ws, ws.data.train[0][0])
    with torch.no_grad():
        embedded = model.src_embedding(torch.tensor([ids]))  # (1, S, E)
        _, final = model.encoder(embedded)[:2]  # (L * 2, 1, H): forward and backward final h
    vector, _ = state_vectors(ws, [ws.data.train[0]], "encoder")
    want = torch.cat([final[-2, 0], final[-1, 0]]).numpy()
    assert vector[0] == pytest.approx(want, abs=1e-5)


def test_bad_requests_are_one_line(workspace):
    index = build_index(workspace, workspace.data.train[:10], "decoder", 1)
    with pytest.raises(UserError, match="need a target"):
        nearest(workspace, index, "abc", "")
    with pytest.raises(UserError, match="longer than"):
        build_index(workspace, workspace.data.train[:10], "decoder", 500)
