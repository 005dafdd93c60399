"""Recorder overhead: a plain PyTorch training loop with and without explorer.Recorder, on the
nanoGPT CPU recipe's model (GPT 4 layers x 128, 4 heads, context 64, batch 12), in one process,
alternating rounds so machine load affects both alike.

    python benchmarks/bench_recorder.py [--rounds 6] [--steps 100] [--threads 1] [--text FILE]

Each round runs `--steps` steps (forward, cross-entropy, backward, clip, AdamW step, loss.item());
the recorded loop also calls `record.step(step, loss=loss, lr=lr)` every step, with a snapshot every
100 steps (one per round at the default), which copies the weights on the training thread and writes
them from a background thread. The overhead is 1 - recorded / plain steps per second, median of the
per-round ratios; it must be <= 2%. Under a loaded machine the rounds vary more than that, so the
script also reports the time spent inside record.step itself, which load hardly blurs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import explorer  # noqa: E402
from seqmodels.config import build_model, make_config  # noqa: E402

SHAKESPEARE = Path("/work/shared/data/tinyshakespeare/input.txt")


def make_model_and_data(text: str):
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    config = make_config("gpt", d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.0,
                         max_len=64, vocab_size=len(vocab))
    return build_model(config), vocab, data


def batches(data: torch.Tensor, seed: int, context: int = 64, batch: int = 12):
    generator = torch.Generator().manual_seed(seed)
    while True:
        starts = torch.randint(0, len(data) - context - 1, (batch,), generator=generator)
        block = torch.stack([data[s: s + context + 1] for s in starts])  # (B, T + 1)
        yield block[:, :-1], block[:, 1:]


def train_steps(model, optimizer, feed, steps: int, record=None, first: int = 1,
                inside: list | None = None) -> float:
    """Seconds for `steps` steps; `inside` collects the seconds spent in record.step."""
    started = time.perf_counter()
    for step in range(first, first + steps):
        x, y = next(feed)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        value = loss.item()
        if record is not None:
            before = time.perf_counter()
            record.step(step, loss=value, lr=1e-3)
            if inside is not None:
                inside.append(time.perf_counter() - before)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--text", type=Path, default=SHAKESPEARE)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    text = args.text.read_text(encoding="utf-8") if args.text.is_file() else "to be or not " * 999
    torch.manual_seed(0)
    plain_model, vocab, data = make_model_and_data(text)
    torch.manual_seed(0)
    recorded_model, _, _ = make_model_and_data(text)
    plain_opt = torch.optim.AdamW(plain_model.parameters(), lr=1e-3)
    recorded_opt = torch.optim.AdamW(recorded_model.parameters(), lr=1e-3)
    plain_feed, recorded_feed = batches(data, 1), batches(data, 1)
    with tempfile.TemporaryDirectory() as root:
        with explorer.Recorder(Path(root) / "run", model=recorded_model, tokenizer=vocab,
                               snapshot_every=100, kind="lm") as record:
            train_steps(plain_model, plain_opt, plain_feed, 10)  # warm-up both
            train_steps(recorded_model, recorded_opt, recorded_feed, 10, record)
            step = 11
            ratios, inside, total = [], [], 0.0
            for round_number in range(args.rounds):
                plain = train_steps(plain_model, plain_opt, plain_feed, args.steps)
                recorded = train_steps(recorded_model, recorded_opt, recorded_feed, args.steps,
                                       record, first=step, inside=inside)
                total += recorded
                step += args.steps
                ratios.append(plain / recorded)  # recorded speed / plain speed
                print(f"round {round_number + 1}: plain {args.steps / plain:6.2f} steps/s, "
                      f"recorded {args.steps / recorded:6.2f} steps/s, ratio {plain / recorded:.4f}")
        snapshots = len(list((Path(root) / "run" / "snapshots").iterdir()))
    median = statistics.median(ratios)
    print(f"time inside record.step: {100 * sum(inside) / total:.3f}% of the recorded loop "
          f"(median call {1e6 * statistics.median(inside):.0f} us, slowest {1e3 * max(inside):.1f} "
          "ms: the snapshot's weight copy)")
    print(f"median recorded/plain speed {median:.4f}: overhead {100 * (1 - median):.2f}% "
          f"({snapshots} snapshots written)")
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().strip()}")


if __name__ == "__main__":
    main()
