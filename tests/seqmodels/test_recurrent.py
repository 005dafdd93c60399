"""seqmodels.recurrent against torch's own recurrent modules and the lecture notes' equations."""

import pytest
import torch
from torch import nn

from seqmodels import RNN, GRUCell, LSTMCell, RNNCell, UGRNNCell
from seqmodels.trace import Trace

TORCH_LAYERS = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}
TORCH_CELLS = {"rnn": (RNNCell, nn.RNNCell), "gru": (GRUCell, nn.GRUCell), "lstm": (LSTMCell, nn.LSTMCell)}


def clone_state(h):
    return tuple(t.clone() for t in h) if isinstance(h, tuple) else h.clone()


def as_tuple(h):
    return h if isinstance(h, tuple) else (h,)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("num_layers,bidirectional,batch_first", [
    (1, False, False), (1, True, True), (2, False, True), (2, True, False), (3, True, True),
])
def test_layer_matches_torch_outputs_and_gradients(cell, num_layers, bidirectional, batch_first):
    torch.manual_seed(0)
    I, H, T, B = 3, 5, 6, 4
    reference = TORCH_LAYERS[cell](I, H, num_layers, bidirectional=bidirectional, batch_first=batch_first)
    ours = RNN(cell, I, H, num_layers, bidirectional=bidirectional, batch_first=batch_first)
    assert list(ours.state_dict()) == list(reference.state_dict())
    ours.load_state_dict(reference.state_dict())

    x = torch.randn((B, T, I) if batch_first else (T, B, I))
    D = 2 if bidirectional else 1
    h0 = torch.randn(num_layers * D, B, H)
    hx = (h0, torch.randn(num_layers * D, B, H)) if cell == "lstm" else h0
    x_ref, x_ours = x.clone().requires_grad_(), x.clone().requires_grad_()
    hx_ref, hx_ours = clone_state(hx), clone_state(hx)
    for t in as_tuple(hx_ref) + as_tuple(hx_ours):
        t.requires_grad_()

    out_ref, h_ref = reference(x_ref, hx_ref)
    out_ours, h_ours = ours(x_ours, hx_ours)
    torch.testing.assert_close(out_ours, out_ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(as_tuple(h_ours), as_tuple(h_ref)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)

    weights = torch.randn_like(out_ref)
    loss_ref = (out_ref * weights).sum() + sum(t.square().sum() for t in as_tuple(h_ref))
    loss_ours = (out_ours * weights).sum() + sum(t.square().sum() for t in as_tuple(h_ours))
    loss_ref.backward()
    loss_ours.backward()
    torch.testing.assert_close(x_ours.grad, x_ref.grad, atol=1e-5, rtol=1e-5)
    for a, b in zip(as_tuple(hx_ours), as_tuple(hx_ref)):
        torch.testing.assert_close(a.grad, b.grad, atol=1e-5, rtol=1e-5)
    ref_params = dict(reference.named_parameters())
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad, ref_params[name].grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_default_state_and_unbatched_input_match_torch(cell):
    torch.manual_seed(1)
    reference = TORCH_LAYERS[cell](2, 3, 2, bidirectional=True)
    ours = RNN(cell, 2, 3, 2, bidirectional=True)
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(5, 2)  # (T, I): no batch dimension
    out_ref, h_ref = reference(x)
    out_ours, h_ours = ours(x)
    assert out_ours.shape == out_ref.shape == (5, 6)
    torch.testing.assert_close(out_ours, out_ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(as_tuple(h_ours), as_tuple(h_ref)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_pad_mask_matches_packed_sequence(cell):
    torch.manual_seed(2)
    reference = TORCH_LAYERS[cell](3, 4, 2, bidirectional=True, batch_first=True)
    ours = RNN(cell, 3, 4, 2, bidirectional=True, batch_first=True)
    ours.load_state_dict(reference.state_dict())
    lengths = torch.tensor([6, 3, 1, 5])
    x = torch.randn(4, 6, 3)
    pad_mask = torch.arange(6)[None, :] >= lengths[:, None]  # (B, T), True = padding
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    packed_out, h_ref = reference(packed)
    out_ref, _ = nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True, total_length=6)
    out_ours, h_ours = ours(x, pad_mask=pad_mask)
    torch.testing.assert_close(out_ours, out_ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(as_tuple(h_ours), as_tuple(h_ref)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_cells_match_torch_cells(cell):
    torch.manual_seed(3)
    ours_type, torch_type = TORCH_CELLS[cell]
    reference, ours = torch_type(3, 4), ours_type(3, 4)
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(2, 3)
    state = (torch.randn(2, 4), torch.randn(2, 4)) if cell == "lstm" else torch.randn(2, 4)
    for a, b in zip(as_tuple(ours(x, state)), as_tuple(reference(x, state))):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_ugrnn_cell_follows_the_lecture_equations():
    torch.manual_seed(4)
    H = 4
    cell = UGRNNCell(3, H)
    x, h = torch.randn(2, 3), torch.randn(2, H)
    A_ux, A_sx = cell.weight_ih[:H], cell.weight_ih[H:]
    A_uh, A_sh = cell.weight_hh[:H], cell.weight_hh[H:]
    b_u = cell.bias_ih[:H] + cell.bias_hh[:H]
    b_s = cell.bias_ih[H:] + cell.bias_hh[H:]
    u = torch.sigmoid(h @ A_uh.T + x @ A_ux.T + b_u)
    s = torch.tanh(h @ A_sh.T + x @ A_sx.T + b_s)
    torch.testing.assert_close(cell(x, h), u * h + (1 - u) * s)


def test_ugrnn_layer_is_its_cell_unrolled_both_directions():
    torch.manual_seed(5)
    layer = RNN("ugrnn", 3, 4, bidirectional=True, batch_first=True)
    assert layer.weight_ih_l0.shape == (8, 3) and layer.weight_hh_l0_reverse.shape == (8, 4)
    forward_cell, backward_cell = UGRNNCell(3, 4), UGRNNCell(3, 4)
    for cell, suffix in ((forward_cell, ""), (backward_cell, "_reverse")):
        cell.load_state_dict({k: getattr(layer, f"{k}_l0{suffix}") for k in cell.state_dict()})
    x = torch.randn(2, 5, 3)
    out, h_n = layer(x)
    h, forward_states = torch.zeros(2, 4), []
    for t in range(5):
        h = forward_cell(x[:, t], h)
        forward_states.append(h)
    h, backward_states = torch.zeros(2, 4), [None] * 5
    for t in reversed(range(5)):
        h = backward_cell(x[:, t], h)
        backward_states[t] = h
    expected = torch.cat([torch.stack(forward_states, 1), torch.stack(backward_states, 1)], -1)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(h_n, torch.stack([forward_states[-1], backward_states[0]]))


@pytest.mark.parametrize("cell", ["rnn", "ugrnn", "gru", "lstm"])
def test_trace_holds_the_tensors_of_the_recurrence(cell):
    torch.manual_seed(6)
    layer = RNN(cell, 3, 4, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(2, 5, 3)
    out, h_n, trace = layer(x, trace=True)
    out_plain, _ = layer(x)
    torch.testing.assert_close(out, out_plain)
    assert isinstance(trace, Trace)
    assert set(trace.hidden) == {"l0", "l0_reverse", "l1", "l1_reverse"}
    assert all(len(steps) == 5 and steps[0].shape == (2, 4) for steps in trace.hidden.values())
    # Position t of both directions is the output at t.
    torch.testing.assert_close(torch.stack(trace.hidden["l1"], 1), out[..., :4])
    torch.testing.assert_close(torch.stack(trace.hidden["l1_reverse"], 1), out[..., 4:])
    expected_gates = {"rnn": set(), "ugrnn": {"u", "s"}, "gru": {"r", "z", "n"}, "lstm": {"i", "f", "g", "o"}}
    assert set(trace.gates.get("l0", {})) == expected_gates[cell]
    assert bool(trace.cell) == (cell == "lstm")

    # Total derivative: dL/dh_t by autograd on the traced tensors equals a finite difference on h_t.
    loss = out[:, -1, :4].sum()
    grads = torch.autograd.grad(loss, trace.hidden["l1"])
    assert grads[-1].abs().sum() > 0 and grads[0].abs().sum() > 0
    assert torch.equal(grads[-1], torch.ones(2, 4))


def test_trace_gradients_match_direct_perturbation():
    """dL/dh_t from the trace equals what we get by re-running the recurrence from a perturbed h_t."""
    torch.manual_seed(7)
    cell = GRUCell(2, 3).double()
    layer = RNN("gru", 2, 3, batch_first=True).double()
    layer.load_state_dict({f"{k}_l0": v for k, v in cell.state_dict().items()})
    x = torch.randn(1, 6, 2, dtype=torch.float64)
    out, _, trace = layer(x, trace=True)
    t = 2
    grad_t = torch.autograd.grad(out[:, -1].sum(), trace.hidden["l0"][t])[0]

    def loss_from(h):
        for s in range(t + 1, 6):
            h = cell(x[:, s], h)
        return h.sum()

    h_t = trace.hidden["l0"][t].detach().requires_grad_()
    torch.testing.assert_close(grad_t, torch.autograd.grad(loss_from(h_t), h_t)[0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown cell"):
        RNN("elman", 2, 3)
    layer = RNN("gru", 2, 3, num_layers=2)
    with pytest.raises(ValueError, match="hidden state"):
        layer(torch.randn(4, 1, 2), torch.zeros(1, 1, 3))


def run_both_paths(layer, x, hx, pad_mask):
    """The fused path (no trace) and the step-by-step path (trace=True) on cloned inputs, each with a
    backward pass of the same loss. -> two tuples (output, final states, input grads, parameter grads)."""
    results = []
    for trace in (False, True):
        layer.zero_grad()
        x_in = x.clone().requires_grad_()
        hx_in = clone_state(hx)
        for t in as_tuple(hx_in):
            t.requires_grad_()
        out, h_n = layer(x_in, hx_in, trace=trace, pad_mask=pad_mask)[:2]
        loss = (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum()
        loss = loss + sum(t.square().sum() for t in as_tuple(h_n))
        loss.backward()
        input_grads = (x_in.grad,) + tuple(t.grad for t in as_tuple(hx_in))
        results.append((out, as_tuple(h_n), input_grads, [p.grad.clone() for p in layer.parameters()]))
    return results


def assert_same_results(fused, stepped):
    for a, b in zip(fused, stepped):
        for u, v in zip(a if isinstance(a, (tuple, list)) else (a,), b if isinstance(b, (tuple, list)) else (b,)):
            torch.testing.assert_close(u, v, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("num_layers,bidirectional,batch_first", [
    (1, False, False), (1, True, True), (2, False, True), (2, True, False), (3, True, True), (3, False, False),
])
@pytest.mark.parametrize("padded", [False, True])
def test_fused_path_matches_step_by_step_path(cell, num_layers, bidirectional, batch_first, padded):
    torch.manual_seed(8)
    I, H, T, B = 3, 4, 5, 3
    layer = RNN(cell, I, H, num_layers, bidirectional=bidirectional, batch_first=batch_first, dropout=0.5)
    layer.eval()  # dropout between layers is off in eval mode, in both paths
    x = torch.randn((B, T, I) if batch_first else (T, B, I))
    D = 2 if bidirectional else 1
    h0 = torch.randn(num_layers * D, B, H)
    hx = (h0, torch.randn(num_layers * D, B, H)) if cell == "lstm" else h0
    pad_mask = torch.arange(T)[None, :] >= torch.tensor([2, 5, 4])[:, None] if padded else None  # (B, T)
    fused, stepped = run_both_paths(layer, x, hx, pad_mask)
    assert_same_results(fused, stepped)
    if padded:  # padded steps output zeros in both paths
        out = fused[0] if batch_first else fused[0].transpose(0, 1)
        assert out[0, 2:].abs().sum() == 0 and out[0, :2].abs().sum() > 0


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_fused_path_is_taken_without_trace_and_skipped_with_it(cell, monkeypatch):
    layer = RNN(cell, 2, 3, num_layers=2, bidirectional=True, batch_first=True)
    x, pad_mask = torch.randn(2, 4, 2), torch.tensor([[False] * 4, [False, False, True, True]])
    traced = layer(x, pad_mask=pad_mask, trace=True)[0]

    def refuse(*args, **kwargs):
        raise AssertionError("the step-by-step path ran without a trace")

    monkeypatch.setattr(RNN, "run_cells", refuse)
    torch.testing.assert_close(layer(x, pad_mask=pad_mask)[0], traced)
    with pytest.raises(AssertionError, match="step-by-step"):
        layer(x, trace=True)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_masks_a_packed_sequence_cannot_express_use_the_step_path(cell):
    """Left padding, holes and all-padding rows are not right padding: no packing, same answer as traced."""
    torch.manual_seed(9)
    layer = RNN(cell, 2, 3, bidirectional=True, batch_first=True).eval()
    x = torch.randn(3, 5, 2)
    pad_mask = torch.tensor([[True, True, False, False, False],  # left padding
                             [False, True, False, True, False],  # holes
                             [True, True, True, True, True]])  # nothing real: the state passes through
    out, h_n = layer(x, pad_mask=pad_mask)
    out_traced, h_traced, _ = layer(x, pad_mask=pad_mask, trace=True)
    torch.testing.assert_close(out, out_traced)
    for a, b in zip(as_tuple(h_n), as_tuple(h_traced)):
        torch.testing.assert_close(a, b)
    assert out[2].abs().sum() == 0 and torch.equal(as_tuple(h_n)[0][:, 2], torch.zeros(2, 3))


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_fused_path_unbatched_input_with_pad_mask(cell):
    torch.manual_seed(10)
    layer = RNN(cell, 2, 3, num_layers=2, bidirectional=True)
    x = torch.randn(4, 2)  # (T, I): no batch dimension
    h0 = torch.randn(4, 3)  # (L * D, H)
    hx = (h0, torch.randn(4, 3)) if cell == "lstm" else h0
    fused, stepped = run_both_paths(layer, x, hx, torch.tensor([False, False, False, True]))
    assert fused[0].shape == (4, 6) and fused[0][3].abs().sum() == 0
    assert_same_results(fused, stepped)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_fused_path_applies_dropout_between_layers_in_training(cell):
    torch.manual_seed(11)
    layer = RNN(cell, 2, 3, num_layers=2, dropout=1.0).train()
    x = torch.randn(5, 2, 2)
    # Dropout 1 zeros the second layer's input in both paths, which makes them comparable exactly.
    fused, stepped = layer(x)[0], layer(x, trace=True)[0]
    torch.testing.assert_close(fused, stepped)
    top = RNN(cell, 3, 3)
    top.load_state_dict({k.replace("_l1", "_l0"): v for k, v in layer.state_dict().items() if "_l1" in k})
    torch.testing.assert_close(fused, top(torch.zeros(5, 2, 3))[0])
    assert not torch.allclose(fused, layer.eval()(x)[0])


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_the_cells_own_recurrence_step_by_step_matches_torch(cell):
    """The path where each cell computes its recurrence from h and its own weights (a trace forces
    it) against torch.nn.RNN/GRU/LSTM with the same weights, two layers, both directions."""
    torch.manual_seed(11)
    reference = TORCH_LAYERS[cell](3, 5, 2, bidirectional=True, batch_first=True)
    ours = RNN(cell, 3, 5, 2, bidirectional=True, batch_first=True)
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(4, 6, 3)
    out_ref, h_ref = reference(x)
    out_ours, h_ours, _ = ours(x, trace=True)
    torch.testing.assert_close(out_ours, out_ref, atol=1e-5, rtol=1e-5)
    for a, b in zip(as_tuple(h_ours), as_tuple(h_ref)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_cho_gru_puts_the_reset_gate_before_the_product():
    """gru-cho against a hand loop of Cho et al. (2014): r = σ(W_r x + U_r h), z = σ(W_z x + U_z h),
    h̃ = tanh(W x + U (r ⊙ h)), h = z ⊙ h + (1 - z) ⊙ h̃ (biases split like torch's)."""
    torch.manual_seed(12)
    H = 4
    layer = RNN("gru-cho", 3, H, batch_first=True)
    W, U = layer.weight_ih_l0, layer.weight_hh_l0
    b_i, b_h = layer.bias_ih_l0, layer.bias_hh_l0
    block = lambda m, k: m[k * H:(k + 1) * H]  # noqa: E731 - rows of gate k (r, z, n)
    x = torch.randn(2, 5, 3)
    h, states = torch.zeros(2, H), []
    for t in range(5):
        xt = x[:, t]
        r = torch.sigmoid(xt @ block(W, 0).T + block(b_i, 0) + h @ block(U, 0).T + block(b_h, 0))
        z = torch.sigmoid(xt @ block(W, 1).T + block(b_i, 1) + h @ block(U, 1).T + block(b_h, 1))
        candidate = torch.tanh(xt @ block(W, 2).T + block(b_i, 2) + (r * h) @ block(U, 2).T + block(b_h, 2))
        h = z * h + (1 - z) * candidate
        states.append(h)
    out, h_n = layer(x)
    torch.testing.assert_close(out, torch.stack(states, 1))
    torch.testing.assert_close(h_n[0], h)
    # and it is another function than torch's GRU with the same weights
    gru = RNN("gru", 3, H, batch_first=True)
    gru.load_state_dict(layer.state_dict())
    assert not torch.allclose(gru(x)[0], out, atol=1e-4)


def test_mgu_is_the_papers_formula_unrolled():
    """The registered mgu against a hand loop of Zhou et al. (2016): f = σ(W_f x + U_f h + b_f),
    h̃ = tanh(W_h x + U_h (f ⊙ h) + b_h), h = (1 - f) ⊙ h + f ⊙ h̃; both directions, and its
    gates in the trace."""
    torch.manual_seed(13)
    H = 4
    layer = RNN("mgu", 3, H, bidirectional=True, batch_first=True)
    x = torch.randn(2, 5, 3)

    def unrolled(suffix, positions):
        W, U = getattr(layer, f"weight_ih_l0{suffix}"), getattr(layer, f"weight_hh_l0{suffix}")
        b = getattr(layer, f"bias_ih_l0{suffix}") + getattr(layer, f"bias_hh_l0{suffix}")
        W_f, W_h, U_f, U_h, b_f, b_h = W[:H], W[H:], U[:H], U[H:], b[:H], b[H:]
        h, states, forget = torch.zeros(2, H), [None] * 5, [None] * 5
        for t in positions:
            f = torch.sigmoid(x[:, t] @ W_f.T + h @ U_f.T + b_f)
            candidate = torch.tanh(x[:, t] @ W_h.T + (f * h) @ U_h.T + b_h)
            h = (1 - f) * h + f * candidate
            states[t], forget[t] = h, f
        return torch.stack(states, 1), forget

    forward, forget = unrolled("", range(5))
    backward, _ = unrolled("_reverse", reversed(range(5)))
    out, h_n, trace = layer(x, trace=True)
    torch.testing.assert_close(out, torch.cat([forward, backward], -1))
    torch.testing.assert_close(h_n, torch.stack([forward[:, -1], backward[:, 0]]))
    torch.testing.assert_close(torch.stack(trace.gates["l0"]["f"], 1), torch.stack(forget, 1))
