"""Seq2Seq: incremental decoding equals teacher forcing for every cell and attention score, padding,
bridging, reverse_source and the trace."""

import pytest
import torch

from seqmodels import Seq2Seq, build_model, make_config
from seqmodels.config import ATTENTION_SCORES, BOS_ID, PAD_ID
from seqmodels.state import reorder_state, repeat_state

CELLS = ["rnn", "ugrnn", "gru", "lstm"]
SRC = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, PAD_ID, PAD_ID], [11, 2, PAD_ID, PAD_ID, PAD_ID]])  # (3, 5)
TGT_IN = torch.tensor([[BOS_ID, 7, 8, 9], [BOS_ID, 5, 6, 12], [BOS_ID, 13, 14, 15]])  # (3, 4)


def tiny(cell="gru", attention="additive", **overrides):
    torch.manual_seed(0)
    values = dict(src_vocab_size=16, vocab_size=17, cell=cell, attention=attention, embed_dim=6,
                  hidden_size=8, num_layers=2, bidirectional_encoder=True)
    values.update(overrides)
    return build_model(make_config("seq2seq", **values)).eval()


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("attention", ATTENTION_SCORES)
def test_step_equals_forward(cell, attention):
    model = tiny(cell, attention, reverse_source=attention == "none")
    logits = model(SRC, TGT_IN, SRC.eq(PAD_ID))
    assert logits.shape == (3, 4, 17)
    state = model.start(SRC, SRC.eq(PAD_ID))
    assert state["h"].shape == (3, 2, 8)
    for t in range(TGT_IN.shape[1]):
        step_logits, state, attn = model.step(TGT_IN[:, t], state)
        torch.testing.assert_close(step_logits, logits[:, t], atol=1e-5, rtol=1e-5)
        if attention == "none":
            assert attn is None
        else:
            assert attn.shape == (3, 1, 1, 5)
            assert torch.all(attn[:, 0, 0][SRC.eq(PAD_ID)] == 0)


@pytest.mark.parametrize("attention", ["none", "additive", "general"])
def test_padding_does_not_change_a_sentence(attention):
    """A sentence batched with longer ones gives the same logits as on its own."""
    model = tiny("lstm", attention)
    together = model(SRC, TGT_IN)
    alone = model(SRC[1:2, :3], TGT_IN[1:2])
    torch.testing.assert_close(together[1:2], alone, atol=1e-5, rtol=1e-5)


def test_state_reorders_for_beam_search():
    model = tiny("lstm", "dot")
    state = model.start(SRC)
    index = torch.tensor([2, 0, 0])
    expected, _, expected_attn = model.step(TGT_IN[index, 0], model.start(SRC[index]))
    got, _, attn = model.step(TGT_IN[index, 0], reorder_state(state, index))
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(attn, expected_attn)
    repeated, _, _ = model.step(TGT_IN[:, 0].repeat_interleave(2), repeat_state(state, 2))
    torch.testing.assert_close(repeated[::2], repeated[1::2])


def test_reverse_source_reads_real_tokens_backwards():
    order = Seq2Seq.reading_order(SRC.eq(PAD_ID))
    assert order.tolist() == [[4, 3, 2, 1, 0], [2, 1, 0, 3, 4], [1, 0, 2, 3, 4]]
    assert SRC.gather(1, order)[1].tolist() == [2, 10, 9, PAD_ID, PAD_ID]
    # A unidirectional encoder over the reversed source is the same encoder fed reversed tokens.
    model = tiny("gru", "dot", reverse_source=True, bidirectional_encoder=False)
    plain = tiny("gru", "dot", reverse_source=False, bidirectional_encoder=False)
    reversed_src = SRC.gather(1, order)
    _, trace = model(SRC, TGT_IN, trace=True)
    _, plain_trace = plain(reversed_src, TGT_IN, trace=True)
    for a, b in zip(trace.hidden["encoder.l1"], plain_trace.hidden["encoder.l1"]):
        torch.testing.assert_close(a, b)
    # Attention weights stay in the order of the source the caller gave.
    src_attn, rev_attn = trace.attention[0].weights, plain_trace.attention[0].weights
    torch.testing.assert_close(src_attn, rev_attn.gather(-1, order[:, None, None, :].expand_as(rev_attn)))


def test_without_attention_the_decoder_sees_only_the_final_state():
    """The thought vector: two sources with the same final encoder state decode identically."""
    model = tiny("gru", "none", bidirectional_encoder=False, num_layers=1)
    assert not hasattr(model, "alignment")
    _, trace = model(SRC, TGT_IN, trace=True)
    assert trace.attention == []
    state = model.start(SRC)
    assert set(state) == {"h"}
    _, h_n = model.encoder(model.src_embedding(SRC), pad_mask=SRC.eq(PAD_ID))
    torch.testing.assert_close(state["h"], h_n.transpose(0, 1))  # (B, L, H)
    # Rows with the same final state decode the same, whatever else their sources held.
    state["h"][2] = state["h"][0]
    logits, _, _ = model.step(TGT_IN[:, 0], state)
    torch.testing.assert_close(logits[2], logits[0])
    # Gradient reaches the first encoder step only through the last one.
    logits, trace = model(SRC[:1], TGT_IN[:1], trace=True)
    steps = trace.hidden["encoder.l0"]
    g_last = torch.autograd.grad(logits.sum(), steps[-1], retain_graph=True)[0]
    g_first = torch.autograd.grad(logits.sum(), steps[0])[0]
    assert g_last.abs().sum() > 0 and g_first.abs().sum() > 0


@pytest.mark.parametrize("attention", ["additive", "location"])
def test_trace_contents(attention):
    model = tiny("lstm", attention)
    logits, trace = model(SRC, TGT_IN, SRC.eq(PAD_ID), trace=True)
    torch.testing.assert_close(logits, model(SRC, TGT_IN))
    assert set(trace.hidden) == {"encoder.l0", "encoder.l0_reverse", "encoder.l1", "encoder.l1_reverse",
                                 "decoder.l0", "decoder.l1"}
    assert len(trace.hidden["decoder.l1"]) == 4 and len(trace.hidden["encoder.l0"]) == 5
    assert set(trace.gates["decoder.l0"]) == {"i", "f", "g", "o"} and "decoder.l1" in trace.cell
    (cross,) = trace.attention_of("cross")
    assert cross.layer == 0 and cross.weights.shape == (3, 1, 4, 5)
    torch.testing.assert_close(cross.weights.sum(-1), torch.ones(3, 1, 4))
    assert torch.all(cross.weights[1, 0, :, 3:] == 0)
    grads = torch.autograd.grad(logits[:, -1].sum(), trace.hidden["decoder.l1"] + trace.hidden["encoder.l0"])
    assert all(g.abs().sum() > 0 for g in grads[:4])


def test_fits_a_small_copy_task():
    torch.manual_seed(0)
    model = tiny("gru", "dot", hidden_size=16, num_layers=1).train()
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    src = torch.randint(5, 16, (16, 4))
    tgt_in = torch.cat([torch.full((16, 1), BOS_ID), src], 1)[:, :-1]  # [<bos>] + src[:-1]
    for _ in range(40):
        loss = torch.nn.functional.cross_entropy(model(src, tgt_in).reshape(-1, 17), src.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.3
