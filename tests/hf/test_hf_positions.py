"""What Hugging Face models use for positions, against the models' own modules and the notes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

from explorer.analysis.positional import model_positions, similarity, sinusoidal  # noqa: E402
from explorer.hf.positions import no_table_reason, relative_bias, sinusoidal_check  # noqa: E402


@pytest.mark.parametrize("name, module", [
    ("gpt2", "transformer.wpe"), ("bert", "bert.embeddings.position_embeddings"),
    ("distilbert", "distilbert.embeddings.position_embeddings"),
])
def test_learned_tables_are_the_models_own(hf_workspace, name, module):
    model = hf_workspace(name).model
    found = model_positions(model)
    weight = model.hf.get_submodule(module).weight.detach().double().numpy()
    assert found.kind == "learned" and module in found.note
    np.testing.assert_array_equal(found.table, weight)
    # the cosine similarity the panel draws, by brute force over pairs of rows
    sims = similarity(found.table, "cosine")
    for n, m in ((0, 0), (3, 17), (63, 1)):
        a, b = weight[n], weight[m]
        assert sims[n, m] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-12)


def test_marian_table_is_the_notes_sinusoid_with_sin_and_cos_halves(hf_workspace):
    model = hf_workspace("marian").model
    found = model_positions(model)
    assert found.kind == "sinusoidal"
    table = model.hf.model.encoder.embed_positions.weight.detach().double().numpy()
    np.testing.assert_array_equal(found.table, table)
    n, d = table.shape
    # the lecture notes: PE[n, 2j] = sin(n / 10000^(2j/d)), PE[n, 2j+1] = cos(n / 10000^(2j/d));
    # Marian stores every sin first, then every cos
    positions = np.arange(n)[:, None]
    angles = positions / 10000 ** (np.arange(0, d, 2) / d)[None, :]
    np.testing.assert_allclose(table, np.concatenate([np.sin(angles), np.cos(angles)], 1), atol=1e-6)
    np.testing.assert_allclose(sinusoidal(n, d)[:, 0::2], np.sin(angles), atol=1e-12)
    layout, error = sinusoidal_check(found.table)
    assert layout == "sin half, cos half" and error < 1e-6
    assert "sin half, cos half" in found.note


@pytest.mark.parametrize("length", [5, 40])
def test_t5_relative_bias_is_the_models_compute_bias(hf_workspace, length):
    model = hf_workspace("t5").model
    assert model_positions(model) is None and "T5" in no_table_reason(model)
    biases = {b.stack: b for b in relative_bias(model, length)}
    assert set(biases) == {"encoder", "decoder"}
    stacks = {"encoder": model.hf.encoder, "decoder": model.hf.decoder}
    for stack, bias in biases.items():
        attention = stacks[stack].block[0].layer[0].SelfAttention
        with torch.no_grad():
            expected = attention.compute_bias(length, length)[0].numpy()  # (H, Q, K)
        assert bias.bias.shape == (4, length, length)
        np.testing.assert_allclose(bias.bias, expected, atol=1e-7)
        assert bias.bidirectional == (stack == "encoder")
        # the curve against distance: one value per k - q, the same as every cell on that diagonal
        for h in range(4):
            for q, k in ((0, length - 1), (length - 1, 0), (2, 2)):
                index = int(np.flatnonzero(bias.distances == k - q)[0])
                assert bias.by_distance[h, index] == pytest.approx(bias.bias[h, q, k])


def test_t5_bias_is_what_its_attention_adds(hf_workspace):
    """The encoder's first-layer position bias, as the model runs, equals the panel's matrix."""
    workspace = hf_workspace("t5")
    ids = workspace.tokenizer.encode("the cat sat on the mat")
    with torch.no_grad():
        out = workspace.model.hf.encoder(input_ids=torch.tensor([ids]), output_attentions=False)
    assert out.last_hidden_state.shape[1] == len(ids)
    encoder = next(b for b in relative_bias(workspace.model, len(ids)) if b.stack == "encoder")
    attention = workspace.model.hf.encoder.block[0].layer[0].SelfAttention
    table = attention.relative_attention_bias.weight.detach().double()
    bucket = type(attention)._relative_position_bucket(
        torch.tensor([[1 - 0]]), bidirectional=True, num_buckets=attention.relative_attention_num_buckets,
        max_distance=attention.relative_attention_max_distance)
    assert encoder.bias[:, 0, 1] == pytest.approx(table[bucket[0, 0]].numpy())


def test_rotary_models_say_why_there_is_no_table():
    from transformers import LlamaConfig, LlamaForCausalLM

    from explorer.hf.adapter import HFCausalLM, HFModelConfig

    config = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    adapter = HFCausalLM(LlamaForCausalLM(config).eval(), HFModelConfig(
        "hf-causal-lm", "llama", 50, 32, None, None, None, 0))
    assert model_positions(adapter) is None and relative_bias(adapter, 4) == []
    assert "rotary" in no_table_reason(adapter)
