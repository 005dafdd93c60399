"""Grouping by length against the mixed batch: greedy decoding of 1,000 Multi30k sources with a
padding-unaware user model (an LSTM encoder-decoder with nn.MultiheadAttention and no masks,
tests/usermodels/lstm_mha.py's kind, sized up), both sides in one run, rounds alternating.

    python benchmarks/bench_user_batching.py [--data DIR] [--rounds 5] [--sources 1000]

mixed: the sources in file order, batches of 16 (the decode command's), padded to their longest:
       the same model opened with Adapter(pad_mask=True), so pads are fed (answers may change:
       that is the cost being compared against, not a correct alternative).
grouped: what the explorer does for a padding-unaware model: windows of 1,024 sorted by length,
       batches of at most 16 of one length (explorer.decoding.batching.in_order), outputs in order.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.decoding import greedy_batch  # noqa: E402
from explorer.decoding.batching import in_order  # noqa: E402
from explorer.decoding.scoring import encode_context  # noqa: E402
from explorer.usermodel.adapter import Adapter  # noqa: E402
from explorer.usermodel.loader import make_workspace  # noqa: E402
from tests.usermodels.lstm_mha import Seq2Seq  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "multi30k"
if not DEFAULT_DATA.is_dir():  # a worktree one level further down
    DEFAULT_DATA = DEFAULT_DATA.parents[3] / "shared" / "data" / "multi30k"
BATCH, MAX_LEN = 16, 20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sources", type=int, default=1000)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    with gzip.open(args.data / "val.de.gz", "rt", encoding="utf-8") as lines:
        sources = [line.strip().lower() for line in lines][: args.sources]
    vocab = ["<pad>", "<bos>", "<eos>", "<unk>"] + sorted({w for s in sources for w in s.split()})
    torch.manual_seed(0)
    model = Seq2Seq(len(vocab), dim=64, heads=4).eval()
    unaware = make_workspace(model, vocab, Adapter(kind="seq2seq"))
    padded = make_workspace(model, vocab, Adapter(kind="seq2seq", pad_mask=True))
    assert not unaware.model.handles_padding and padded.model.handles_padding
    contexts = [encode_context(unaware, s) for s in sources]

    def mixed():
        for start in range(0, len(contexts), BATCH):
            greedy_batch(padded.model, contexts[start : start + BATCH], max_len=MAX_LEN)

    def grouped():
        for _ in in_order(unaware.model, contexts, BATCH,
                          lambda batch: greedy_batch(unaware.model, batch, max_len=MAX_LEN)):
            pass

    times = {"mixed": [], "grouped": []}
    for round_ in range(args.rounds):
        for name, run in (("mixed", mixed), ("grouped", grouped))[:: 1 if round_ % 2 == 0 else -1]:
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    mixed_s, grouped_s = statistics.median(times["mixed"]), statistics.median(times["grouped"])
    lengths = sorted({len(c) for c in contexts})
    print(f"{len(contexts)} sources, {len(lengths)} lengths ({lengths[0]}..{lengths[-1]} ids), "
          f"batches of {BATCH}, max_len {MAX_LEN}, {torch.get_num_threads()} thread(s), "
          f"{args.rounds} rounds alternating")
    print(f"mixed batch (pads fed)  median {mixed_s:.2f} s  "
          f"{[round(t, 2) for t in times['mixed']]}")
    print(f"grouped by length       median {grouped_s:.2f} s  "
          f"{[round(t, 2) for t in times['grouped']]}")
    print(f"grouped / mixed = {grouped_s / mixed_s:.3f} (goal <= 1.10)")


if __name__ == "__main__":
    main()
