"""Beam search cost on a tiny Transformer (untrained weights: the cost does not depend on them).

1. Time per generated token as the output grows: with the cached keys/values the 64th token should
   cost no more than 1.5x the 8th.
2. Beam width k against greedy: one batched forward per step for all k hypotheses, so width 5
   should cost at most 2.5x greedy per generated position.

The search runs as `explorer` runs it, with explorer.runtime.tune_allocator applied: with glibc's
default, the per-step copies of the growing key/value cache of many rows (8 sources x 5 beams) pass
its moving mmap threshold and every step pays fresh page faults; --default-allocator shows that.

Run: python benchmarks/bench_beam.py [--threads N] [--repeats R] [--default-allocator]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import torch

from explorer.decoding.search import BeamSearch, TokenByToken
from explorer.runtime import tune_allocator
from seqmodels.config import EOS_ID, build_model, make_config

VOCAB = 1000
SOURCE_LEN = 20
MAX_LEN = 72  # a little past the 64th position, whose cost is the thing measured


def tiny_transformer(seed: int = 0):
    torch.manual_seed(seed)
    config = make_config("transformer", "tiny", vocab_size=VOCAB, src_vocab_size=VOCAB, max_len=128)
    # untrained over 1000 tokens, <eos> almost never ranks in the top k: every run goes to max_len
    # (growth_table checks that it did)
    return build_model(config).eval()


def random_sources(count: int, seed: int = 1) -> list[list[int]]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (count, SOURCE_LEN - 1), generator=generator)
    return [row.tolist() + [EOS_ID] for row in ids]


def step_times(search) -> list[float]:
    """CPU seconds of each advance(): choosing position t and running the forward for t + 1.

    CPU time of this process, not wall time: the machine is shared and wall time is mostly noise.
    """
    times = []
    while True:
        start = time.process_time()
        more = search.advance()
        times.append(time.process_time() - start)
        if not more:
            return times


def per_position(model, make_search, repeats: int) -> list[float]:
    """Median over `repeats` runs of each position's time; the garbage collector is paused while
    timing (as timeit does), so a collection of unrelated objects is not billed to one step."""
    gc.collect()
    gc.disable()
    try:
        runs = [step_times(make_search()) for _ in range(repeats)]
    finally:
        gc.enable()
    length = min(len(r) for r in runs)
    return [statistics.median(r[i] for r in runs) for i in range(length)]


def window(times: list[float], position: int, half: int = 2) -> float:
    """Median around a 1-based output position, to smooth scheduler noise."""
    lo, hi = max(0, position - 1 - half), min(len(times), position + half)
    return statistics.median(times[lo:hi])


def growth_table(model, sources, repeats: int) -> None:
    print(f"\n1. CPU time per generated token vs position (tiny Transformer, V={VOCAB}, "
          f"source length {SOURCE_LEN}, max_len {MAX_LEN})")
    print(f"{'search':<22}{'8th (ms)':>10}{'16th':>10}{'32nd':>10}{'64th':>10}{'64th/8th':>10}")
    for label, batch, width in (("beam k=5, 1 source", 1, 5), ("beam k=5, 8 sources", 8, 5),
                                ("greedy, 1 source", 1, None)):
        def make(batch=batch, width=width):
            if width is None:
                return TokenByToken(model, sources[:batch], max_len=MAX_LEN)
            return BeamSearch(model, sources[:batch], beam_size=width, max_len=MAX_LEN)

        times = per_position(model, make, repeats)
        cells = [window(times, p) * 1e3 for p in (8, 16, 32, 64)]
        ratio = cells[3] / cells[0]
        print(f"{label:<22}" + "".join(f"{c:>10.3f}" for c in cells) + f"{ratio:>10.2f}")
        assert len(times) == MAX_LEN, f"{label} stopped after {len(times)} positions"


def width_table(model, sources, repeats: int) -> None:
    print(f"\n2. beam width vs greedy: CPU ms per generated position, {MAX_LEN} positions")
    print(f"{'sources':>8}{'greedy':>10}{'k=2':>10}{'k=5':>10}{'k=10':>10}{'k=5/greedy':>12}")
    for batch in (1, 8):
        cells = {}
        for width in (None, 2, 5, 10):
            def make(width=width):
                if width is None:
                    return TokenByToken(model, sources[:batch], max_len=MAX_LEN)
                return BeamSearch(model, sources[:batch], beam_size=width, max_len=MAX_LEN)

            times = per_position(model, make, repeats)
            cells[width] = statistics.mean(times) * 1e3
        ratio = cells[5] / cells[None]
        print(f"{batch:>8}" + "".join(f"{cells[w]:>10.3f}" for w in (None, 2, 5, 10))
              + f"{ratio:>12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--default-allocator", action="store_true",
                        help="skip the allocator setting that `explorer` applies at start-up")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tuned = not args.default_allocator and tune_allocator()
    model = tiny_transformer()
    sources = random_sources(8)
    with torch.no_grad():
        BeamSearch(model, sources, beam_size=5, max_len=4).advance()  # warm-up
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeats} runs, "
          f"allocator: {'as explorer sets it (glibc heap up to 256 MiB)' if tuned else 'glibc default'}")
    growth_table(model, sources, args.repeats)
    width_table(model, sources, args.repeats)


if __name__ == "__main__":
    main()
