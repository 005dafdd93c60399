"""Character-level GPT on Tiny Shakespeare with nanoGPT's CPU recipe, through explorer's engine.

    python benchmarks/bench_char_gpt_shakespeare.py [--data PATH] [--threads 1]

Recipe (nanoGPT, config/train_shakespeare_char.py with its README's CPU settings): 4 layers,
4 heads, 128-wide embeddings, context 64, batch 12, 2000 iterations, AdamW lr 1e-3 with 100
warm-up steps and cosine decay to 1e-4, beta2 0.99, weight decay 0.1, clip 1.0, dropout 0.
The last 10% of the lines are the validation set. nanoGPT reaches a val loss of about 1.88.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.events import EvalMetrics, StepMetrics  # noqa: E402
from explorer.training import DataSpec, TrainConfig, Trainer, build_workspace  # noqa: E402
from seqmodels.config import count_parameters  # noqa: E402

DEFAULT_DATA = "/work/shared/data/tinyshakespeare/input.txt"
TARGET_VAL_LOSS = 1.88


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--eval-every", type=int, default=250)
    args = parser.parse_args()

    torch.manual_seed(1337)
    started = time.perf_counter()
    workspace = build_workspace(
        DataSpec(text=args.data, tokenizer="char", val_fraction=0.1), "gpt",
        d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.0, max_len=64,
        positional="learned", seed=1337,
    )
    setup_s = time.perf_counter() - started
    config = TrainConfig(
        steps=args.steps, batch_size=12, context=64, lr=1e-3, schedule="cosine", warmup=100,
        min_lr_ratio=0.1, betas=(0.9, 0.99), weight_decay=0.1, clip=1.0, seed=1337,
        eval_every=args.eval_every, eval_examples=1000, device=args.device,
        num_threads=args.threads,
    )
    print(f"vocabulary {workspace.tokenizer.vocab_size}, "
          f"{count_parameters(workspace.model):,} parameters, set-up {setup_s:.1f} s", flush=True)
    tokens, final = 0, None
    train_started = time.perf_counter()
    for event in Trainer(workspace, config).run():
        if isinstance(event, StepMetrics):
            tokens += event.tokens
        elif isinstance(event, EvalMetrics):
            final = event
            print(f"step {event.step:5d}  val loss {event.val_loss:.4f}  "
                  f"({time.perf_counter() - train_started:.0f} s)", flush=True)
        else:
            print(event)
    wall = time.perf_counter() - train_started
    print()
    print("| run | steps | val loss | target | wall time | tokens/s |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| char-GPT 4x128 Tiny Shakespeare, {args.threads} thread(s) | {args.steps} | "
          f"{final.val_loss:.4f} | <= {TARGET_VAL_LOSS} | {wall:.0f} s | {tokens / wall:,.0f} |")
    print("PASS" if final.val_loss <= TARGET_VAL_LOSS else "FAIL")


if __name__ == "__main__":
    main()
