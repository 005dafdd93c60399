"""Embeddings (PCA, neighbours, analogies, token sets) against brute force and numpy's SVD; the
logit lens against the model's own next-token distribution (our GPT, our Transformer, HF GPT-2)."""

import numpy as np
import pytest
import torch

from explorer.analysis import embeddings as emb
from explorer.analysis.hidden import hidden_snapshot
from explorer.data.tokenizers import CharTokenizer, WordTokenizer
from explorer.workspace import Workspace
from seqmodels import build_model, make_config


def cosine(u, v):
    return float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))


def test_nearest_neighbours_equal_brute_force():
    matrix = np.random.default_rng(0).standard_normal((40, 6))
    for index in (0, 7, 39):
        brute = sorted(((cosine(matrix[index], matrix[j]), j) for j in range(40) if j != index), reverse=True)
        found = emb.nearest_neighbours(matrix, index, k=5)
        assert [i for i, _ in found] == [j for _, j in brute[:5]]
        np.testing.assert_allclose([s for _, s in found], [s for s, _ in brute[:5]], atol=1e-12)


def test_analogy_equals_brute_force_and_solves_king_man_woman():
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((30, 5))
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    a, b, c = 3, 8, 11
    target = unit[a] - unit[b] + unit[c]
    brute = sorted(((cosine(target, matrix[j]), j) for j in range(30) if j not in (a, b, c)), reverse=True)
    found = emb.analogy(matrix, a, b, c, k=4)
    assert [i for i, _ in found] == [j for _, j in brute[:4]]
    np.testing.assert_allclose([s for _, s in found], [s for s, _ in brute[:4]], atol=1e-12)
    # the notes' table (gender, royal, age, food): king - man + woman is queen
    words = ["man", "woman", "king", "queen", "apple", "orange"]
    table = np.array([[-1, 0.01, 0.03, 0.04], [1, 0.02, 0.02, 0.01], [-0.95, 0.93, 0.7, 0.02],
                      [0.97, 0.95, 0.68, 0.01], [0.0, -0.01, 0.03, 0.95], [0.01, 0.0, -0.02, 0.97]])
    best, _ = emb.analogy(table, words.index("king"), words.index("man"), words.index("woman"), k=1)[0]
    assert words[best] == "queen"


@pytest.mark.parametrize("shape", [(50, 8), (3000, 400)])  # exact, then the randomized path
def test_pca_matches_numpy_svd(shape):
    rng = np.random.default_rng(2)
    scales = np.r_[10.0, 5.0, np.ones(shape[1] - 2)]  # a clear gap after two components
    matrix = rng.standard_normal(shape) * scales @ np.linalg.qr(rng.standard_normal((shape[1], shape[1])))[0]
    projection = emb.pca_2d(matrix)
    centred = matrix - matrix.mean(axis=0)
    u, s, vt = np.linalg.svd(centred, full_matrices=False)
    reference = centred @ vt[:2].T
    for k in range(2):  # equal up to the sign of each component; the randomized path works in
        # float32 with 3 power iterations: within 0.1% of the component's spread
        sign = np.sign(np.dot(reference[:, k], projection.coords[:, k]))
        spread = reference[:, k].std()
        np.testing.assert_allclose(projection.coords[:, k], sign * reference[:, k], rtol=0, atol=1e-3 * spread)
    np.testing.assert_allclose(projection.explained, s[:2] ** 2 / (s**2).sum(), rtol=1e-4)


def test_token_sets_find_digits_months_and_word_classes():
    tokenizer = WordTokenizer.train(["3 March 2021 was a wed", "the dogs see a cat in the park ( )"])
    tokens = [str(t) for t in tokenizer.tokens(range(tokenizer.vocab_size))]
    sets = emb.token_sets(tokens)
    named = {name: sorted(tokens[i] for i in ids) for name, ids in sets.items()}
    assert named["digits"] == ["2021", "3"]
    assert named["months"] == ["March"] and named["weekdays"] == ["wed"]
    assert named["nouns"] == ["cat", "dogs"] and named["verbs"] == ["see"] and named["places"] == ["park"]
    assert named["brackets"] == ["(", ")"]
    assert sets["reserved"].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("family,kinds,tied", [
    ("rnn-lm", ["input", "output"], False),
    ("seq2seq", ["input", "output", "source"], False),
    ("transformer", ["input", "output", "source"], True),
    ("gpt", ["input", "output"], True),
    ("bert", ["input", "output"], True),
])
def test_embedding_data_reads_the_model_s_own_matrices(family, kinds, tied):
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(["abc 123 (x)"])
    sizes = dict(vocab_size=tokenizer.vocab_size)
    if family in ("seq2seq", "transformer"):
        sizes["src_vocab_size"] = tokenizer.vocab_size
    model = build_model(make_config(family, "tiny", **sizes))
    ws = Workspace(model, tokenizer, tokenizer if "src_vocab_size" in sizes else None)
    data = emb.embedding_data(ws, "output")
    assert data.available == kinds and data.tied == tied
    head = model.head if family in ("rnn-lm", "seq2seq") else model.lm_head
    np.testing.assert_array_equal(data.matrix, head.weight.detach().numpy())
    assert data.tokens[5:] == [str(t) for t in tokenizer.tokens(range(5, tokenizer.vocab_size))]
    assert data.projection.coords.shape == (tokenizer.vocab_size, 2)
    assert sorted(data.tokens[i] for i in data.sets["digits"]) == ["1", "2", "3"]
    assert data.token_id("x") == tokenizer.encode("x")[0]
    assert data.neighbours(7, 3) == emb.nearest_neighbours(data.matrix, 7, 3)
    assert data.analogy(5, 6, 7, 2) == emb.analogy(data.matrix, 5, 6, 7, 2)
    header, rows = data.table()
    assert header == ["id", "token", "pc1", "pc2"] and len(rows) == tokenizer.vocab_size


@pytest.mark.parametrize("family", ["gpt", "transformer"])
def test_logit_lens_last_layer_is_the_model_s_own_distribution(family):
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(["the (cat) sat on a mat"])
    sizes = dict(vocab_size=tokenizer.vocab_size, d_model=16, num_heads=2, num_layers=3, d_ff=32)
    if family == "transformer":
        sizes["src_vocab_size"] = tokenizer.vocab_size
    model = build_model(make_config(family, "tiny", **sizes)).eval()
    ws = Workspace(model, tokenizer, tokenizer if family == "transformer" else None)
    lens = hidden_snapshot(ws, "the (cat)", "sat on").lens
    assert lens.layer_labels == ["embed", "layer 1", "layer 2", "layer 3"]
    with torch.no_grad():
        if family == "gpt":
            ids = tokenizer.encode("the (cat)")
            inputs, targets = (torch.tensor([ids]),), ids[1:]  # the last token has no next one
        else:
            tgt = tokenizer.encode("sat on")
            inputs = (torch.tensor([tokenizer.encode("the (cat)") + [2]]), torch.tensor([[1] + tgt]))
            targets = tgt + [2]
        logits, trace = model(*inputs, trace=True)
        probs = torch.softmax(logits[0], dim=-1)  # (T, V): the model's own next-token distribution
        embedded = model.embed(inputs[0]) if family == "gpt" else model.tgt_embed(inputs[1])
        norm = model.final_norm if family == "gpt" else model.decoder_norm
        residuals = [embedded] + [trace.hidden[f"decoder.layer{k}"][0] for k in range(3)]
        layers = [(None, model.lm_head(norm(x))[0]) for x in residuals]  # the lens written out
    np.testing.assert_allclose(torch.softmax(layers[-1][1], -1).numpy(), probs.numpy(), atol=1e-6)
    p, top = probs.max(dim=-1)
    assert lens.top_ids[-1].tolist() == top.tolist()
    np.testing.assert_allclose(lens.top_probs[-1], p.numpy(), atol=1e-6)
    known = len(targets)
    np.testing.assert_allclose(lens.target_probs[-1][:known], probs[torch.arange(known), targets].numpy(), atol=1e-6)
    assert lens.targets[:known] == [str(t) for t in tokenizer.tokens(targets)]
    if family == "gpt":  # every token typed is shown; the last one has no true next token
        assert len(lens.tokens) == len(ids) and lens.targets[-1] == ""
        assert np.isnan(lens.target_probs[:, -1]).all()
    # a middle layer is the same readout of that layer's residual stream
    middle = torch.softmax(layers[1][1], -1)
    by_hand = torch.softmax(model.lm_head(norm(trace.hidden["decoder.layer0"][0]))[0], -1)
    np.testing.assert_allclose(middle.detach().numpy(), by_hand.detach().numpy(), atol=1e-6)
    tables = lens.tables()
    assert tables["lens_top_token"][0] == ["layer", *lens.tokens]
    assert [row[0] for row in tables["lens_top_prob"][1]] == lens.layer_labels


def test_a_bare_hf_gpt2_s_embeddings_are_read_through_get_input_output_embeddings():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=40, n_positions=16, n_embd=16, n_layer=2, n_head=2,
                                     bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(config).eval()
    # the embeddings panel reads a Hugging Face model through get_input/output_embeddings
    assert emb.available_embeddings(model) == ["input", "output"] and emb.is_tied(model)
    np.testing.assert_array_equal(emb.embedding_matrix(model, "input"), model.transformer.wte.weight.detach().numpy())
