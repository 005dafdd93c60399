"""RNNLanguageModel: incremental steps equal the full forward pass, state carries across calls, tracing."""

import pytest
import torch

from seqmodels import build_model, make_config
from seqmodels.state import reorder_state

CELLS = ["rnn", "ugrnn", "gru", "lstm"]


def tiny(cell, **overrides):
    torch.manual_seed(0)
    values = dict(vocab_size=11, cell=cell, embed_dim=6, hidden_size=8, num_layers=2)
    values.update(overrides)
    return build_model(make_config("rnn-lm", **values)).eval()


@pytest.mark.parametrize("cell", CELLS)
def test_step_by_step_equals_forward(cell):
    model = tiny(cell)
    tokens = torch.randint(0, 11, (3, 7))
    logits = model(tokens)
    assert logits.shape == (3, 7, 11)
    state = model.start(batch_size=3)
    assert state["h"].shape == (3, 2, 8) and (("c" in state) == (cell == "lstm"))
    for t in range(7):
        step_logits, state, attn = model.step(tokens[:, t], state)
        assert attn is None
        torch.testing.assert_close(step_logits, logits[:, t], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_state_carries_across_calls_and_reorders(cell):
    model = tiny(cell)
    tokens = torch.randint(0, 11, (3, 8))
    whole, final = model(tokens, return_state=True)
    first, state = model(tokens[:, :5], return_state=True)
    second = model(tokens[:, 5:], state)
    torch.testing.assert_close(torch.cat([first, second], 1), whole, atol=1e-6, rtol=1e-6)
    # Beam search's reordering: a reordered state continues the reordered rows.
    index = torch.tensor([2, 2, 0])
    moved = model(tokens[index, 5:], reorder_state(state, index))
    torch.testing.assert_close(moved, second[index], atol=1e-6, rtol=1e-6)
    assert set(final) == ({"h", "c"} if cell == "lstm" else {"h"})


def test_trace_names_and_gradients():
    model = tiny("lstm")
    tokens = torch.randint(0, 11, (2, 6))
    logits, state, trace = model(tokens, trace=True, return_state=True)
    assert set(trace.hidden) == {"lm.l0", "lm.l1"} and set(trace.cell) == {"lm.l0", "lm.l1"}
    assert set(trace.gates["lm.l1"]) == {"i", "f", "g", "o"}
    torch.testing.assert_close(trace.hidden["lm.l1"][-1], state["h"][:, 1])
    loss = logits[:, -1].logsumexp(-1).sum()
    grads = torch.autograd.grad(loss, trace.hidden["lm.l0"])
    assert all(g.shape == (2, 8) for g in grads) and grads[0].abs().sum() > 0
    logits_only, trace_only = model(tokens, trace=True)
    torch.testing.assert_close(logits_only, logits)


def test_tied_weights_share_one_matrix():
    model = tiny("gru", embed_dim=8, tie_weights=True)
    assert model.head.weight is model.embedding.weight
    with pytest.raises(ValueError, match="tie_weights"):
        tiny("gru", embed_dim=6, tie_weights=True)


def test_learns_a_repeating_pattern():
    model = tiny("gru").train()
    pattern = torch.tensor([[5, 6, 7, 8] * 4])  # (1, 16)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(60):
        logits = model(pattern[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 11), pattern[:, 1:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.1
