"""A user's model opened in the explorer but idle (no panel asking) against the bare module: the
adapter's forward (trace=False) vs `model(ids)`, on a GPT of nn.TransformerEncoderLayer (4 x 128,
4 heads, context 64, batch 12: the nanoGPT CPU recipe's size), in one process, alternating rounds.

    python benchmarks/bench_user_model_idle.py [--rounds 7] [--calls 20] [--threads 1]

Nothing is attached while idle (the hooks exist only inside a capture or run_with), so the ratio
must be within 2% of 1. Forward passes only, under torch.no_grad() and in eval mode as the panels
run them; the fast path of nn.TransformerEncoderLayer applies to both sides alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.usermodel.adapter import Adapter  # noqa: E402
from explorer.usermodel.loader import make_workspace  # noqa: E402


class GPT(nn.Module):
    def __init__(self, vocab=65, dim=128, heads=4, layers=4, context=64):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                                               batch_first=True) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))  # (B, T, D)
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1])
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        return self.head(x)


def timed(fn, ids, calls: int) -> float:
    started = time.perf_counter()
    with torch.no_grad():
        for _ in range(calls):
            fn(ids)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = GPT().eval()
    vocab = [f"t{i}" for i in range(65)]
    wrapped = make_workspace(model, vocab, Adapter(kind="lm")).model
    ids = torch.randint(0, 65, (12, 64))
    timed(model, ids, 3), timed(wrapped, ids, 3)  # warm-up
    ratios = []
    for number in range(args.rounds):
        bare = timed(model, ids, args.calls)
        idle = timed(wrapped, ids, args.calls)
        ratios.append(idle / bare)
        print(f"round {number + 1}: bare {1e3 * bare / args.calls:7.2f} ms, explorer idle "
              f"{1e3 * idle / args.calls:7.2f} ms per forward, ratio {idle / bare:.4f}")
    print(f"median idle / bare time {statistics.median(ratios):.4f}")
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().strip()}")


if __name__ == "__main__":
    main()
