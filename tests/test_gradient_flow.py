"""Gradient flow through time: the lecture notes' vanishing / exploding example and brute-force references."""

import math

import numpy as np
import pytest
import torch

from explorer.analysis import gradient_norms_by_name, gradient_norms_per_layer, gradient_norms_through_time
from seqmodels import RNN, build_model, make_config


def scalar_rnn(a_h: float) -> RNN:
    """The notes' one-unit RNN h_t = tanh(a_h h_{t-1} + a_x x_t + b) with a_x = 0, b = 0."""
    rnn = RNN("rnn", 1, 1).double()
    with torch.no_grad():
        for p in rnn.parameters():
            p.zero_()
        rnn.weight_hh_l0.fill_(a_h)
    return rnn


@pytest.mark.parametrize("a_h,expected", [(0.9, 2.66e-5), (1.1, 13781)])
def test_lecture_example_vanishing_and_exploding(a_h, expected):
    T = 101  # the first step is k = 100 steps before the last
    inputs = torch.zeros(T, 1, 1, dtype=torch.float64)  # (T, B, I)
    norms = gradient_norms_through_time(scalar_rnn(a_h), inputs, lambda output: output[-1].sum())
    assert norms.shape == (T,)
    exact = np.array([a_h ** (T - 1 - t) for t in range(T)])
    np.testing.assert_allclose(norms, exact, rtol=1e-6)
    assert norms[0] == pytest.approx(expected, rel=2e-3)  # the notes' rounded figures


def test_matches_backpropagation_through_time_by_hand():
    """dL/dh_t = dL/dh_T * prod J_s with J_s = diag(1 - h_s^2) W_hh, for a tanh RNN with real inputs."""
    torch.manual_seed(0)
    rnn = RNN("rnn", 3, 4, batch_first=True).double()
    x = torch.randn(2, 7, 3, dtype=torch.float64)
    readout = torch.randn(4, dtype=torch.float64)
    norms = gradient_norms_through_time(rnn, x, lambda output: (output[:, -1] @ readout).sum())

    with torch.no_grad():
        output, _ = rnn(x)
        W = rnn.weight_hh_l0
        grad = readout.expand(2, 4).clone()  # dL/dh_T, (B, H)
        expected = [0.0] * 7
        for t in range(6, -1, -1):
            expected[t] = grad.norm().item()
            grad = (grad * (1 - output[:, t] ** 2)) @ W  # back through h_t = tanh(W h_{t-1} + ...)
    np.testing.assert_allclose(norms, expected, rtol=1e-10)


def test_ugrnn_keeps_the_gradient_with_its_gate_open():
    """Notes: the UGRNN keeps gradient flowing despite a small A_h by setting u ~ 1. With zero input,
    state and A_sh, dh_t/dh_{t-1} = u = sigmoid(b_u) exactly."""
    T, b_u = 101, 6.0
    ugrnn = RNN("ugrnn", 1, 1).double()
    with torch.no_grad():
        for p in ugrnn.parameters():
            p.zero_()
        ugrnn.bias_ih_l0[0] = b_u  # rows (u, s): the update gate's bias
    inputs = torch.zeros(T, 1, 1, dtype=torch.float64)
    norms = gradient_norms_through_time(ugrnn, inputs, lambda output: output[-1].sum())
    u = 1 / (1 + math.exp(-b_u))
    np.testing.assert_allclose(norms, [u ** (T - 1 - t) for t in range(T)], rtol=1e-9)
    assert norms[0] > 0.7 > 0.9 ** 100


def test_layer_selection_and_bidirectional_forward_direction():
    torch.manual_seed(1)
    rnn = RNN("lstm", 2, 3, num_layers=2, bidirectional=True)
    x = torch.randn(5, 2, 2)
    loss_fn = lambda output: output.square().sum()  # noqa: E731
    output, _, trace = rnn(x, trace=True)
    for layer, name in ((-1, "l1"), (0, "l0"), (1, "l1")):
        grads = torch.autograd.grad(loss_fn(output), trace.hidden[name], retain_graph=True)
        norms = gradient_norms_through_time(rnn, x, loss_fn, layer=layer)
        np.testing.assert_allclose(norms, [g.norm().item() for g in grads], rtol=1e-5)


def test_by_name_over_a_seq2seq_trace():
    torch.manual_seed(2)
    model = build_model(make_config("seq2seq", "tiny", src_vocab_size=12, vocab_size=12, cell="gru"))
    src, tgt_in = torch.tensor([[5, 6, 7, 2]]), torch.tensor([[1, 8, 9]])
    logits, trace = model(src, tgt_in, trace=True)
    loss = logits[0, -1, 9]  # only the last target position
    norms = gradient_norms_by_name(trace.hidden, loss)
    assert set(norms) == {"encoder.l0", "encoder.l0_reverse", "decoder.l0"}
    assert norms["encoder.l0"].shape == (4,) and norms["decoder.l0"].shape == (3,)
    assert np.all(norms["encoder.l0"] > 0) and np.all(norms["decoder.l0"] > 0)
    manual = torch.autograd.grad(loss, trace.hidden["decoder.l0"][1])[0].norm().item()
    assert norms["decoder.l0"][1] == pytest.approx(manual, rel=1e-6)


def test_per_layer_orders_bottom_to_top():
    x = torch.randn(2, 3, 4, requires_grad=True)
    enc0 = x * 2.0  # (B, T, D) block outputs of a made-up three-block model
    enc1 = enc0 * 3.0
    dec0 = enc1 * 0.5
    loss = dec0.sum()
    hidden = {"decoder.layer0": [dec0], "encoder.layer1": [enc1], "encoder.layer0": [enc0]}
    names, norms = gradient_norms_per_layer(hidden, loss)
    assert names == ["encoder.layer0", "encoder.layer1", "decoder.layer0"]
    root_n = math.sqrt(x.numel())
    np.testing.assert_allclose(norms, [1.5 * root_n, 0.5 * root_n, root_n], rtol=1e-6)
