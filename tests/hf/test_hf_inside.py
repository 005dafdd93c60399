"""Inside a Hugging Face model: the hidden panel's residual stream and logit lens on GPT-2, and the
embeddings panel, checked against transformers' own outputs (tiny models built offline)."""

import numpy as np
import pytest
import torch

from explorer.analysis.embeddings import embedding_data, nearest_neighbours
from explorer.analysis.hidden import hidden_snapshot
from explorer.ui.panels.embeddings import EmbeddingsPanel
from explorer.ui.panels.hidden import LENS, HiddenPanel
from tests.ui.test_inside_panels import hover, open_panel

TEXT = "the cat sat on the mat"


def gpt2_reference(workspace, text):
    """transformers' own numbers for the probe of `text`: input ids, hidden states, the last
    block's output (run by hand, before ln_f) and the adapter's next-token distribution."""
    hf = workspace.model.hf
    ids = workspace.tokenizer.encode(text)
    inputs = torch.tensor([ids])  # a language model's probe reads every token typed
    with torch.no_grad():
        out = hf(input_ids=inputs, output_hidden_states=True)
        block = hf.transformer.h[-1](out.hidden_states[-2])
        block = block[0] if isinstance(block, tuple) else block  # (1, T, D)
        probs = torch.softmax(workspace.model(inputs)[0], dim=-1)  # (T, V)
    return ids, out.hidden_states, block, probs


def test_gpt2_residual_stream_norms_are_its_hidden_states_norms(hf_workspace):
    ws = hf_workspace("gpt2")
    snapshot = hidden_snapshot(ws, TEXT)
    ids, hidden, block, _ = gpt2_reference(ws, TEXT)
    [stack] = snapshot.stacks
    assert stack.stream == "decoder" and stack.layer_labels == ["embed", "layer 1", "layer 2"]
    assert stack.tokens == ws.tokenizer.tokens(ids)
    # the embedding and the first block: transformers' hidden_states as they are
    for k in range(len(hidden) - 1):
        np.testing.assert_allclose(stack.residual_norm[k], hidden[k][0].norm(dim=-1).numpy(), rtol=1e-5)
    # the last: the block's output before ln_f (hidden_states[-1] has ln_f applied)
    np.testing.assert_allclose(stack.residual_norm[-1], block[0].norm(dim=-1).numpy(), rtol=1e-5)
    with torch.no_grad():
        np.testing.assert_allclose(ws.model.hf.transformer.ln_f(block)[0].numpy(), hidden[-1][0].numpy(), atol=1e-5)
    np.testing.assert_allclose(stack.block_outputs[0], hidden[1][0].T.numpy(), atol=1e-6)
    np.testing.assert_allclose(stack.block_outputs[-1], block[0].T.numpy(), atol=1e-5)


def test_gpt2_logit_lens_last_layer_is_the_model_s_own_distribution(hf_workspace):
    ws = hf_workspace("gpt2")
    lens = hidden_snapshot(ws, TEXT).lens
    ids, hidden, _, probs = gpt2_reference(ws, TEXT)
    assert lens.layer_labels == ["embed", "layer 1", "layer 2"]
    p, top = probs.max(dim=-1)
    assert lens.top_ids[-1].tolist() == top.tolist()
    np.testing.assert_allclose(lens.top_probs[-1], p.numpy(), rtol=1e-5)
    targets = ids[1:]  # the last token has no next one
    np.testing.assert_allclose(lens.target_probs[-1][:-1], probs[torch.arange(len(targets)), targets].numpy(), rtol=1e-5)
    assert np.isnan(lens.target_probs[-1][-1])
    assert lens.targets == ws.tokenizer.tokens(targets) + [""]
    # a middle layer: that layer's residual stream through GPT-2's ln_f and lm_head
    hf = ws.model.hf
    with torch.no_grad():
        first = torch.softmax(hf.lm_head(hf.transformer.ln_f(hidden[1]))[0], dim=-1)
    np.testing.assert_allclose(lens.top_probs[1], first.max(dim=-1).values.numpy(), rtol=1e-5)
    assert lens.top_tokens[1] == ws.tokenizer.tokens(first.argmax(dim=-1).tolist())


@pytest.mark.parametrize("name,streams", [("bert", ["encoder"]), ("marian", ["encoder", "decoder"])])
def test_masked_lm_and_encoder_decoder_show_their_hidden_states(hf_workspace, name, streams):
    ws = hf_workspace(name)
    snapshot = hidden_snapshot(ws, "the cat sat", "der hund")
    assert [s.stream for s in snapshot.stacks] == streams and snapshot.lens is None
    hf = ws.model.hf
    src = torch.tensor([ws.tokenizer.encode("the cat sat")])
    with torch.no_grad():
        if name == "bert":
            hidden = {"encoder": hf(input_ids=src, output_hidden_states=True).hidden_states}
        else:
            tgt = torch.tensor([[ws.model.config.start_id] + ws.tokenizer.encode_target("der hund")[:-1]])
            out = hf(input_ids=src, decoder_input_ids=tgt, output_hidden_states=True)
            hidden = {"encoder": out.encoder_hidden_states, "decoder": out.decoder_hidden_states}
    for stack in snapshot.stacks:
        expected = torch.cat(hidden[stack.stream], dim=0).norm(dim=-1).numpy()  # (layers + 1, T)
        np.testing.assert_allclose(stack.residual_norm, expected, rtol=1e-5)


def test_hidden_panel_on_gpt2_draws_residual_stream_and_lens(qtbot, hf_workspace):
    ws = hf_workspace("gpt2")
    panel = open_panel(qtbot, HiddenPanel, ws)
    titles = [panel.layer_box.itemText(i) for i in range(panel.layer_box.count())]
    assert titles == ["decoder: residual-stream norm", "decoder: layer 1 output", "decoder: layer 2 output",
                      "logit lens"]
    stack = panel.snapshot.stacks[0]
    np.testing.assert_array_equal(panel.heatmap.image.image, stack.residual_norm)
    assert hover(panel.heatmap, 2, 1) == (f"layer 2, position 1, token {stack.tokens[1]!r}\n"
                                          f"norm = {stack.residual_norm[2, 1]:.6g}")
    panel.layer_box.setCurrentIndex(panel.layer_box.findData(LENS))
    lens = panel.snapshot.lens
    assert panel.lens_table.item(0, 0).text().split("\n") == [lens.top_tokens[-1][0], f"{lens.top_probs[-1, 0]:.2f}"]


def test_embeddings_panel_on_gpt2(qtbot, hf_workspace):
    ws = hf_workspace("gpt2")
    panel = open_panel(qtbot, EmbeddingsPanel, ws)
    weight = ws.model.hf.get_input_embeddings().weight.detach().numpy()
    assert [panel.which_box.itemData(i) for i in range(panel.which_box.count())] == ["input", "output"]
    np.testing.assert_array_equal(panel.data.matrix, weight)
    assert panel.data.tokens == ws.tokenizer.tokens(range(weight.shape[0]))
    assert panel.data.tied and "tied" in panel.status.text()
    index = panel.data.token_id("cat")  # "␣cat" (GPT-2's "Ġcat") without its space mark
    assert index is not None and panel.data.tokens[index] in ("cat", "␣cat")
    panel.select_token(index)
    assert panel.neighbours == nearest_neighbours(weight, index, 10)
    output = embedding_data(ws, "output")
    np.testing.assert_array_equal(output.matrix, ws.model.hf.get_output_embeddings().weight.detach().numpy())
