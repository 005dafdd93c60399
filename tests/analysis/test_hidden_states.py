"""explorer.analysis.hidden against independent recomputations: torch.nn.LSTM / GRU with the same
weights, the gate equations of the lecture notes computed by hand, and a Transformer's blocks run
one by one."""

import numpy as np
import pytest
import torch
from torch import nn

from explorer.analysis.hidden import hidden_snapshot, hidden_table
from explorer.data.tokenizers import CharTokenizer
from explorer.workspace import Workspace
from seqmodels import build_model, make_config

TEXTS = ["the (cat) sat", "a [dog] ran {far}", 'she said "hi"']


def workspace(family, **overrides):
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(TEXTS)
    sizes = dict(vocab_size=tokenizer.vocab_size)
    if family in ("seq2seq", "transformer"):
        sizes["src_vocab_size"] = tokenizer.vocab_size
    model = build_model(make_config(family, "tiny", **{**sizes, **overrides}))
    return Workspace(model, tokenizer, tokenizer if "src_vocab_size" in sizes else None)


def sigmoid(x):
    return torch.sigmoid(x)


def lstm_gates_by_hand(layer: nn.LSTM, x, h_prev):
    """The notes' LSTM equations with torch's (i, f, g, o) row blocks, for all steps at once."""
    pre = x @ layer.weight_ih_l0.T + layer.bias_ih_l0 + h_prev @ layer.weight_hh_l0.T + layer.bias_hh_l0
    i, f, g, o = pre.chunk(4, dim=-1)
    return {"i": sigmoid(i), "f": sigmoid(f), "g": torch.tanh(g), "o": sigmoid(o)}


def test_two_layer_lstm_states_gates_and_csv_equal_torch_lstm():
    ws = workspace("rnn-lm", cell="lstm", num_layers=2, embed_dim=8, hidden_size=6)
    model = ws.model
    text = "the (cat) sat"
    snapshot = hidden_snapshot(ws, text)
    ids = ws.tokenizer.encode(text)  # every token typed, the last one's h_t too (issue 22)
    tokens = [str(t) for t in ws.tokenizer.tokens(ids)]
    assert [layer.name for layer in snapshot.layers] == ["lm.l0", "lm.l1"]

    with torch.no_grad():
        x = model.embedding(torch.tensor([ids]))  # (1, T, E)
        for k, layer_states in enumerate(snapshot.layers):
            reference = nn.LSTM(x.shape[-1], 6, batch_first=True)
            reference.load_state_dict({f"{n}_l0": getattr(model.rnn, f"{n}_l{k}")
                                       for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")})
            h, (_, _) = reference(x)  # (1, T, H)
            h_prev = torch.cat([torch.zeros(1, 1, 6), h[:, :-1]], dim=1)
            gates = lstm_gates_by_hand(reference, x, h_prev)
            c = torch.zeros(1, 6)
            cells = []
            for t in range(x.shape[1]):  # c_t = f ⊙ c_{t-1} + i ⊙ g
                c = gates["f"][:, t] * c + gates["i"][:, t] * gates["g"][:, t]
                cells.append(c)
            np.testing.assert_allclose(layer_states.hidden, h[0].T.numpy(), atol=1e-6)
            np.testing.assert_allclose(layer_states.cell, torch.cat(cells).T.numpy(), atol=1e-6)
            for name, value in gates.items():
                np.testing.assert_allclose(layer_states.gates[name], value[0].T.numpy(), atol=1e-6)
            assert layer_states.tokens == tokens
            x = h

    header, rows = hidden_table(snapshot.layers, "h")
    assert header == ["unit", *tokens]
    assert [row[0] for row in rows] == [f"l{k}:{u}" for k in (1, 2) for u in range(6)]
    exported = np.array([row[1:] for row in rows], dtype=np.float64)
    np.testing.assert_array_equal(exported, np.concatenate([l.hidden for l in snapshot.layers]))
    gate_header, gate_rows = hidden_table(snapshot.layers, "f")
    assert gate_header == header and gate_rows[7][0] == "l2:1"


def test_bidirectional_gru_seq2seq_encoder_and_decoder_equal_torch_gru():
    ws = workspace("seq2seq", cell="gru", attention="dot", bidirectional_encoder=True,
                   embed_dim=8, hidden_size=5)
    model = ws.model
    snapshot = hidden_snapshot(ws, "a (d)", "d a")
    names = [layer.name for layer in snapshot.layers]
    assert names == ["encoder.l0", "encoder.l0_reverse", "decoder.l0"]
    src = ws.tokenizer.encode("a (d)") + [2]
    forward, backward, decoder = snapshot.layers
    assert forward.tokens == [str(t) for t in ws.tokenizer.tokens(src)] and backward.reverse
    assert forward.row_labels()[:2] == ["l1:0", "l1:1"] and backward.row_labels()[0] == "l1_reverse:0"

    reference = nn.GRU(8, 5, batch_first=True, bidirectional=True)
    reference.load_state_dict(model.encoder.state_dict())
    with torch.no_grad():
        x = model.src_embedding(torch.tensor([src]))
        out, _ = reference(x)  # (1, T, 2H): forward half then backward half
        np.testing.assert_allclose(forward.hidden, out[0, :, :5].T.numpy(), atol=1e-6)
        np.testing.assert_allclose(backward.hidden, out[0, :, 5:].T.numpy(), atol=1e-6)
        # GRU gates by hand (torch's form: r multiplies W_hn h + b_hn)
        h_prev = torch.cat([torch.zeros(1, 1, 5), out[:, :-1, :5]], dim=1)
        gi = x @ reference.weight_ih_l0.T + reference.bias_ih_l0
        gh = h_prev @ reference.weight_hh_l0.T + reference.bias_hh_l0
        (i_r, i_z, i_n), (h_r, h_z, h_n) = gi.chunk(3, -1), gh.chunk(3, -1)
        r, z = sigmoid(i_r + h_r), sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        for name, value in {"r": r, "z": z, "n": n}.items():
            np.testing.assert_allclose(forward.gates[name], value[0].T.numpy(), atol=1e-6)
    # the decoder's states are the model's own: h_t = (1 - z) n + z h_{t-1} from its gates
    g, h = decoder.gates, decoder.hidden
    h_before = np.concatenate([np.zeros((5, 1)), h[:, :-1]], axis=1)
    h_before[:, 0] = np.tanh(  # the bridge from the bidirectional encoder's final states
        model.bridge_h(torch.cat([out[0, -1, :5], out[0, 0, 5:]])).detach().numpy())
    np.testing.assert_allclose(h, (1 - g["z"]) * g["n"] + g["z"] * h_before, atol=1e-6)
    assert decoder.tokens == ["<bos>", *map(str, ws.tokenizer.tokens(ws.tokenizer.encode("d a")))]
    assert decoder.tokens[1] == "d"


def test_ugrnn_gates_follow_the_lecture_equation():
    ws = workspace("rnn-lm", cell="ugrnn", embed_dim=4, hidden_size=3)
    layer = hidden_snapshot(ws, "a [dog] ran").layers[0]
    assert layer.quantities() == ["h", "u", "s"] and layer.cell is None
    u, s, h = layer.gates["u"], layer.gates["s"], layer.hidden
    h_before = np.concatenate([np.zeros((3, 1)), h[:, :-1]], axis=1)
    np.testing.assert_allclose(h, u * h_before + (1 - u) * s, atol=1e-6)  # h_t = u h_{t-1} + (1-u) s_t


def test_reverse_source_labels_follow_the_reading_order():
    ws = workspace("seq2seq", cell="lstm", attention="none", bidirectional_encoder=False,
                   reverse_source=True)
    snapshot = hidden_snapshot(ws, "ad", "d")
    encoder = snapshot.layers_of("encoder")[0]
    assert encoder.tokens == ["<eos>", "d", "a"]
    assert encoder.quantities() == ["h", "c", "i", "f", "g", "o"]


@pytest.mark.parametrize("family", ["gpt", "transformer", "bert"])
def test_transformer_residual_norms_and_block_outputs_equal_running_the_blocks(family):
    ws = workspace(family, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.1)
    model = ws.model
    model.train()
    snapshot = hidden_snapshot(ws, "the (cat)", "sat")
    assert model.training  # put back
    stack = snapshot.stacks[-1]
    assert stack.layer_labels == ["embed", "layer 1", "layer 2"]
    model.eval()
    with torch.no_grad():
        if family == "transformer":
            src = torch.tensor([ws.tokenizer.encode("the (cat)") + [2]])
            memory = model.encode(src)
            x = model.tgt_embed(torch.tensor([[1] + ws.tokenizer.encode("sat")]))
            blocks = [lambda y, layer=layer: layer(y, memory)[0] for layer in model.decoder_layers]
        else:
            ids = ws.tokenizer.encode("the (cat)")
            x = model.embed(torch.tensor([ids]))
            blocks = [lambda y, layer=layer: layer(y, is_causal=family == "gpt")[0] for layer in model.layers]
        norms = [x.norm(dim=-1)[0]]
        for k, block in enumerate(blocks):
            x = block(x)
            norms.append(x.norm(dim=-1)[0])
            np.testing.assert_allclose(stack.block_outputs[k], x[0].T.numpy(), atol=1e-5)
    np.testing.assert_allclose(stack.residual_norm, torch.stack(norms).numpy(), rtol=1e-5)
    assert (snapshot.lens is not None) == (family != "bert")
