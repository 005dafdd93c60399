"""LSTMVis selection speed and the embedding panel's core work.

Targets (issue 15): selecting a pattern over 100k validation tokens answers in < 200 ms; the
projection of a 50k-token vocabulary draws in < 1 s (this times the PCA and a neighbour query,
the part before any drawing).

The query is what a drag on the hidden panel runs: `select_units` on the probe text (512 units x
256 steps) then `find_matches` over a 100k-token stream of 512 units. The stream is an AR(1) series
per unit, so units stay on for runs of tokens as trained LSTM units do. Also timed once: computing
the stream itself with `state_streams` for a 2-layer, 256-unit LSTM LM (done in the background when
the data changes, not per query).

Run: `python benchmarks/bench_selection.py [--stream-tokens N]`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from explorer.analysis.embeddings import analogy, nearest_neighbours, pca_2d, unit_rows
from explorer.analysis.selection import StateStream, find_matches, select_units


def ar1(rng: np.random.Generator, units: int, length: int, keep: float = 0.95) -> np.ndarray:
    noise = rng.standard_normal((units, length)).astype(np.float32) * np.sqrt(1 - keep**2)
    values = np.empty_like(noise)
    values[:, 0] = noise[:, 0]
    for t in range(1, length):  # an explicit loop once, outside the timing
        values[:, t] = keep * values[:, t - 1] + noise[:, t]
    return np.tanh(values)


def time_ms(function, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def selection_query(units=512, steps=256, tokens=100_000, repeats=50) -> None:
    rng = np.random.default_rng(0)
    probe = ar1(rng, units, steps)
    values = ar1(rng, units, tokens)
    starts = np.arange(0, tokens, 100, dtype=np.int64)  # texts of 100 tokens
    stream = StateStream("lm.l0", values, ["x"] * tokens, starts)
    spans = [(s, s + n) for s, n in zip(rng.integers(10, 200, repeats), rng.integers(3, 12, repeats))]
    found = []

    def query():
        start, end = spans[len(found) % repeats]
        selection = select_units(probe, int(start), int(end), threshold=0.3)
        found.append(len(find_matches(stream, selection.units, 0.3, query_length=int(end - start))))

    times = time_ms(query, repeats)
    print(f"selection over {tokens:,} tokens x {units} units: median {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms ({repeats} queries; median {statistics.median(found)} matches)")


def stream_cost(tokens: int) -> None:
    from explorer.analysis.streams import state_streams
    from explorer.data.tasks import make_task
    from explorer.data.tokenizers import CharTokenizer
    from explorer.workspace import Workspace
    from seqmodels import build_model, make_config

    data = make_task("brackets", n_train=10, n_val=2000, n_test=1)
    tokenizer = CharTokenizer.train([s for s, _ in data.train + data.val])
    torch.manual_seed(0)
    model = build_model(make_config("rnn-lm", vocab_size=tokenizer.vocab_size, cell="lstm",
                                    embed_dim=64, hidden_size=256, num_layers=2))
    workspace = Workspace(model, tokenizer, data=data)
    start = time.perf_counter()
    streams = state_streams(workspace, data.val, max_tokens=tokens, batch_size=64)
    seconds = time.perf_counter() - start
    length = next(iter(streams.values())).length
    print(f"state_streams: {length:,} tokens, 2-layer 256-unit LSTM: {seconds:.1f} s (once per data/weights)")


def embeddings(vocab=50_000, dim=256, repeats=5) -> None:
    matrix = np.random.default_rng(1).standard_normal((vocab, dim)).astype(np.float32)
    pca = time_ms(lambda: pca_2d(matrix), repeats)
    unit = unit_rows(matrix)  # cached by EmbeddingData: a click costs one matrix-vector product
    neighbours = time_ms(lambda: nearest_neighbours(unit, 123, 10, normalized=True), repeats)
    analogies = time_ms(lambda: analogy(unit, 1, 2, 3, 10, normalized=True), repeats)
    print(f"embeddings {vocab:,} x {dim}: PCA median {statistics.median(pca):.0f} ms, "
          f"neighbours {statistics.median(neighbours):.0f} ms, analogy {statistics.median(analogies):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream-tokens", type=int, default=100_000)
    parser.add_argument("--skip-stream", action="store_true", help="skip timing state_streams")
    args = parser.parse_args()
    torch.set_num_threads(1)
    selection_query()
    embeddings()
    if not args.skip_stream:
        stream_cost(args.stream_tokens)


if __name__ == "__main__":
    main()
