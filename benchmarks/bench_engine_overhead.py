"""Engine overhead: tokens/s of explorer's Trainer vs a plain PyTorch loop on the same model and
batches, measured in one run, alternating rounds so machine load affects both alike.

    python benchmarks/bench_engine_overhead.py [--rounds 6] [--steps 25] [--threads 1]

The plain loop does what any training loop does: draw the batch, forward, cross-entropy,
zero_grad, backward, clip_grad_norm_, optimizer step, loss.item(). The engine adds the schedule,
seeding, the NaN guard's weight copy, the gradient-norm record, the events and the history.
The ratio engine / plain must be >= 0.95.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.events import StepMetrics  # noqa: E402
from explorer.training import DataSpec, TrainConfig, Trainer, build_workspace  # noqa: E402
from explorer.training.engine import make_optimizer  # noqa: E402
from explorer.training.feeds import make_feed  # noqa: E402
from explorer.training.objectives import compute_loss  # noqa: E402

CASES = {
    # nanoGPT's CPU recipe for character-level Shakespeare, on the built-in LM task
    "gpt 4x128, context 64, batch 12": dict(
        data=DataSpec(task="brackets"), family="gpt",
        model=dict(d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.0, max_len=64),
        train=dict(batch_size=12, context=64),
    ),
    "seq2seq GRU+additive 128, batch 64": dict(
        data=DataSpec(task="dates"), family="seq2seq",
        model=dict(cell="gru", attention="additive", embed_dim=64, hidden_size=128),
        train=dict(batch_size=64),
    ),
}


def plain_steps(model, optimizer, feed, first_step: int, steps: int, clip: float) -> int:
    tokens = 0
    for step in range(first_step, first_step + steps):
        batch = feed.train_batch(step)
        loss = compute_loss(model, batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        loss.item()
        tokens += batch.num_target_tokens if batch.tokens is None else batch.tokens.numel()
    return tokens


def measure(name: str, case: dict, rounds: int, steps: int, threads: int) -> tuple[float, float]:
    torch.manual_seed(0)
    workspace = build_workspace(case["data"], case["family"], **case["model"])
    plain_model = copy.deepcopy(workspace.model).train()
    config = TrainConfig(steps=10**9, eval_every=0, device="cpu", num_threads=threads, lr=1e-3,
                         **case["train"])
    plain_optimizer = make_optimizer(plain_model, config)
    plain_feed = make_feed(workspace, config)
    events = Trainer(workspace, config).run()

    def engine_round() -> tuple[int, float]:
        tokens, started = 0, time.perf_counter()
        done = 0
        while done < steps:
            event = next(events)
            if isinstance(event, StepMetrics):
                tokens += event.tokens
                done += 1
        return tokens, time.perf_counter() - started

    engine_round()  # warm-up: the feed, the optimizer and the first allocations
    plain_steps(plain_model, plain_optimizer, plain_feed, 1, steps, config.clip)
    engine_tokens = plain_tokens = 0
    engine_s = plain_s = 0.0
    for r in range(rounds):
        first = steps * (r + 1) + 1
        order = ("engine", "plain") if r % 2 == 0 else ("plain", "engine")
        for which in order:
            if which == "engine":
                tokens, seconds = engine_round()
                engine_tokens, engine_s = engine_tokens + tokens, engine_s + seconds
            else:
                started = time.perf_counter()
                plain_tokens += plain_steps(plain_model, plain_optimizer, plain_feed, first, steps,
                                            config.clip)
                plain_s += time.perf_counter() - started
    events.close()
    return engine_tokens / engine_s, plain_tokens / plain_s


def main() -> None:
    parser = argparse.ArgumentParser(description="engine tokens/s vs a plain PyTorch loop")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=25, help="steps per round and side")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"| model | engine tok/s | plain tok/s | ratio |  ({args.rounds} rounds x {args.steps} "
          f"steps each side, {args.threads} thread(s), torch {torch.__version__})")
    print("|---|---:|---:|---:|")
    worst = float("inf")
    for name, case in CASES.items():
        engine, plain = measure(name, case, args.rounds, args.steps, args.threads)
        worst = min(worst, engine / plain)
        print(f"| {name} | {engine:,.0f} | {plain:,.0f} | {engine / plain:.3f} |", flush=True)
    print(f"worst ratio {worst:.3f} ({'PASS' if worst >= 0.95 else 'FAIL'}: must be >= 0.95)")


if __name__ == "__main__":
    main()
