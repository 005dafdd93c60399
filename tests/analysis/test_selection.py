"""LSTMVis's selection on an RNN with hand-set weights whose unit K turns on inside brackets, the
stream matcher against a brute-force scan, and the nesting-depth units."""

import numpy as np
import pytest
import torch

from explorer.analysis.hidden import hidden_snapshot
from explorer.analysis.nesting import depth_correlation, depth_units, nesting_depth
from explorer.analysis.selection import StateStream, find_matches, match_context, select_units
from explorer.analysis.streams import state_streams
from explorer.data.tokenizers import CharTokenizer
from explorer.workspace import Workspace
from seqmodels import build_model, make_config

K, HIDDEN = 5, 8
LINES = ["the (cat) sat on a mat", "a (dog ran) far", "so we (stayed in) with tea", "no brackets here",
         "(at the start) and (again)"]


def planted_workspace():
    """An Elman RNN LM, one-hot embeddings, small random weights, and unit K wired as a latch:
    '(' switches it on, ')' off, a self-loop of 4 holds it (the notes' quote cell, by hand)."""
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(LINES)
    vocab = tokenizer.vocab_size
    model = build_model(make_config("rnn-lm", vocab_size=vocab, cell="rnn", embed_dim=vocab,
                                    hidden_size=HIDDEN, num_layers=1))
    with torch.no_grad():
        model.embedding.weight.copy_(torch.eye(vocab))
        for p in model.rnn.parameters():
            p.uniform_(-0.05, 0.05)
        w_ih, w_hh = model.rnn.weight_ih_l0, model.rnn.weight_hh_l0
        w_ih[K] = 0.0
        w_ih[K, tokenizer.encode("(")[0]] = 8.0
        w_ih[K, tokenizer.encode(")")[0]] = -8.0
        w_hh[K] = 0.0
        w_hh[K, K] = 4.0
        model.rnn.bias_ih_l0[K], model.rnn.bias_hh_l0[K] = -2.0, 0.0
    return Workspace(model, tokenizer, data=None)


def bracket_runs(text: str) -> list[tuple[int, int]]:
    """Where unit K is on, by the text alone: from each '(' up to the token before its ')'."""
    runs, start = [], None
    for i, ch in enumerate(text):
        if ch == "(":
            start = i
        elif ch == ")":
            runs.append((start, i))
    return runs


def test_selection_finds_the_planted_unit_and_where_else_it_fires():
    ws = planted_workspace()
    probe_text = "the (cat) sat on a mat"
    layer = hidden_snapshot(ws, probe_text).layers[0]
    start, end = bracket_runs(probe_text)[0]
    selection = select_units(layer.hidden, start, end, threshold=0.5)
    assert selection.units.tolist() == [K]
    assert selection.scores[0] > 1.0  # about +0.96 inside, about -0.96 around
    # a span that leaves the brackets is not an on/off pattern of unit K
    assert K not in select_units(layer.hidden, start, end + 2, threshold=0.5).units

    pairs = [(line, "") for line in LINES]
    stream = state_streams(ws, pairs)["lm.l0"]
    assert stream.values.shape == (HIDDEN, sum(len(line) for line in LINES))
    matches = find_matches(stream, selection.units, 0.5, query_length=end - start)
    offsets = np.r_[0, np.cumsum([len(line) for line in LINES])]
    expected = {(offsets[i] + a, offsets[i] + b) for i, line in enumerate(LINES) for a, b in bracket_runs(line)}
    assert set(zip(matches.starts.tolist(), matches.ends.tolist())) == expected
    lengths = (matches.ends - matches.starts) - (end - start)
    assert (np.diff(np.abs(lengths)) >= 0).all()  # closest in length to the selection first
    before, match, after = match_context(stream, int(matches.starts[0]), int(matches.ends[0]))
    assert match == "(cat" and before == "the␣" and after.startswith(")␣sat")


def test_depth_units_rank_the_planted_unit_first():
    ws = planted_workspace()
    streams = state_streams(ws, [(line, "") for line in LINES])
    best = depth_units(streams, top=3)
    assert (best[0].name, best[0].unit, best[0].label) == ("lm.l0", K, f"l1:{K}")
    assert best[0].correlation > 0.95
    assert abs(best[1].correlation) < best[0].correlation


def test_nesting_depth_counts_brackets_and_quotes():
    tokens = list('a(b[c]"d")e') + [")", '"x"']
    assert nesting_depth(tokens).tolist() == [0, 1, 1, 2, 2, 1, 2, 2, 1, 0, 0, 0, 0]


def test_depth_correlation_equals_numpy_corrcoef():
    rng = np.random.default_rng(1)
    values = rng.standard_normal((6, 50)).astype(np.float32)
    values[2] = 0.5  # a constant unit has no correlation
    depth = rng.integers(0, 4, 50)
    r = depth_correlation(values, depth)
    for u in (0, 1, 3, 4, 5):
        assert r[u] == pytest.approx(np.corrcoef(values[u], depth)[0, 1], abs=1e-6)
    assert r[2] == 0.0


def brute_force_runs(on: np.ndarray, starts: set[int]) -> list[tuple[int, int]]:
    runs, current = [], None
    for i, flag in enumerate(on):
        if current is not None and (not flag or i in starts):
            runs.append((current, i))
            current = None
        if flag and current is None:
            current = i
    if current is not None:
        runs.append((current, len(on)))
    return runs


@pytest.mark.parametrize("seed", range(5))
def test_find_matches_equals_a_brute_force_scan(seed):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((7, 400)).astype(np.float32)
    starts = np.r_[0, np.sort(rng.choice(np.arange(1, 400), 12, replace=False))]
    stream = StateStream("lm.l0", values, ["x"] * 400, starts)
    units = np.array([1, 4])
    on = (values[units] > -0.3).all(axis=0)
    expected = brute_force_runs(on, set(starts.tolist()))
    matches = find_matches(stream, units, -0.3, query_length=3, limit=None)
    assert sorted(zip(matches.starts.tolist(), matches.ends.tolist())) == expected
    for s, e, m in zip(matches.starts, matches.ends, matches.mean):
        assert m == pytest.approx(values[units, s:e].mean(), rel=1e-5)
    keys = [(abs((e - s) - 3), -m) for s, e, m in zip(matches.starts, matches.ends, matches.mean)]
    assert keys == sorted(keys)


def test_select_units_rejects_a_span_outside_the_text():
    with pytest.raises(ValueError):
        select_units(np.zeros((3, 5)), 4, 7, 0.5)


@pytest.mark.parametrize("family,cell", [("rnn-lm", "lstm"), ("rnn-lm", "ugrnn"), ("seq2seq", "gru"), ("gpt", None)])
def test_state_streams_equal_each_text_s_own_trace(family, cell):
    """Batched and padded (and for LSTM/GRU LMs through torch's fused kernels, layer by layer), each
    text's stretch of the stream is what the probe shows for that text alone."""
    torch.manual_seed(0)
    tokenizer = CharTokenizer.train(LINES)
    sizes = dict(vocab_size=tokenizer.vocab_size)
    overrides = {"cell": cell, "num_layers": 2} if cell else dict(d_model=16, num_heads=2, num_layers=2, d_ff=32)
    if family == "seq2seq":
        sizes["src_vocab_size"] = tokenizer.vocab_size
        overrides.update(num_layers=1, attention="dot")
    model = build_model(make_config(family, "tiny", **sizes, **overrides))
    ws = Workspace(model, tokenizer, tokenizer if family == "seq2seq" else None)
    pairs = [(line, line[::-1]) for line in LINES]
    streams = state_streams(ws, pairs, batch_size=2)
    for i, (source, target) in enumerate(pairs):
        snapshot = hidden_snapshot(ws, source, target)  # every token typed is read
        if snapshot.layers:
            named = {layer.name: (layer.hidden, layer.tokens) for layer in snapshot.layers}
        else:
            named = {f"decoder.layer{k}": (out, snapshot.stacks[0].tokens)
                     for k, out in enumerate(snapshot.stacks[0].block_outputs)}
        assert set(named) == set(streams)
        for name, (values, tokens) in named.items():
            stream = streams[name]
            start = int(stream.starts[i])
            np.testing.assert_allclose(stream.values[:, start:start + len(tokens)], values, atol=1e-5)
            assert stream.tokens[start:start + len(tokens)] == tokens
