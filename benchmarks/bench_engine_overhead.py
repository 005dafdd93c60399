"""Engine overhead: tokens/s of explorer's Trainer vs a plain PyTorch loop on the same model and
batches, measured in one run, alternating rounds so machine load affects both alike.

    python benchmarks/bench_engine_overhead.py [--rounds 6] [--steps 25] [--threads 1]
    python benchmarks/bench_engine_overhead.py --device cuda --precision bf16 --cases gpu

On CUDA both sides run under the same autocast (`--precision bf16|fp16|fp32`); the `gpu` cases
are nanoGPT's GPU recipe for character-level Shakespeare and a wider seq2seq.

The plain loop does what any training loop does: draw the batch, forward, cross-entropy,
zero_grad, backward, clip_grad_norm_, optimizer step, loss.item(). The engine adds the schedule,
seeding, the NaN guard's weight copy, the gradient-norm record, the events and the history.
The ratio engine / plain must be >= 0.95.
"""

from __future__ import annotations

import argparse
import contextlib
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
GPU_CASES = {
    # nanoGPT's GPU recipe for character-level Shakespeare (config/train_shakespeare_char.py)
    "gpt 6x384, context 256, batch 64": dict(
        data=DataSpec(task="brackets"), family="gpt",
        model=dict(d_model=384, num_heads=6, num_layers=6, d_ff=1536, dropout=0.0, max_len=256),
        train=dict(batch_size=64, context=256),
    ),
    "seq2seq GRU+additive 512, batch 256": dict(
        data=DataSpec(task="dates"), family="seq2seq",
        model=dict(cell="gru", attention="additive", embed_dim=256, hidden_size=512),
        train=dict(batch_size=256),
    ),
}


def autocast(device: str, precision: str):
    """What the engine's Trainer._autocast does, for the plain loop."""
    if not device.startswith("cuda") or precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type="cuda", dtype=dtype)


def plain_steps(model, optimizer, feed, first_step: int, steps: int, clip: float,
                device: str = "cpu", precision: str = "fp32") -> int:
    # fp16 would need a GradScaler on both sides: the comparison is made in fp32 and bf16
    tokens = 0
    for step in range(first_step, first_step + steps):
        batch = feed.train_batch(step).to(device)
        with autocast(device, precision):
            loss = compute_loss(model, batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        loss.item()
        tokens += batch.num_target_tokens if batch.tokens is None else batch.tokens.numel()
    return tokens


def measure(name: str, case: dict, rounds: int, steps: int, threads: int, device: str = "cpu",
            precision: str = "fp32") -> tuple[float, float]:
    torch.manual_seed(0)
    workspace = build_workspace(case["data"], case["family"], **case["model"])
    plain_model = copy.deepcopy(workspace.model).to(device).train()
    config = TrainConfig(steps=10**9, eval_every=0, device=device, num_threads=threads, lr=1e-3,
                         precision=precision, **case["train"])
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

    def plain_round(first: int) -> int:
        tokens = plain_steps(plain_model, plain_optimizer, plain_feed, first, steps, config.clip,
                             device, precision)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return tokens

    engine_round()  # warm-up: the feed, the optimizer and the first allocations
    plain_round(1)
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
                plain_tokens += plain_round(first)
                plain_s += time.perf_counter() - started
    events.close()
    return engine_tokens / engine_s, plain_tokens / plain_s


def main() -> None:
    parser = argparse.ArgumentParser(description="engine tokens/s vs a plain PyTorch loop")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=25, help="steps per round and side")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--cases", default="cpu", choices=("cpu", "gpu"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    where = (torch.cuda.get_device_name(args.device) if args.device.startswith("cuda")
             else f"{args.threads} thread(s)")
    print(f"| model | engine tok/s | plain tok/s | ratio |  ({args.rounds} rounds x {args.steps} "
          f"steps each side, {where}, {args.precision}, torch {torch.__version__})")
    print("|---|---:|---:|---:|")
    worst = float("inf")
    for name, case in (GPU_CASES if args.cases == "gpu" else CASES).items():
        engine, plain = measure(name, case, args.rounds, args.steps, args.threads, args.device,
                                args.precision)
        worst = min(worst, engine / plain)
        print(f"| {name} | {engine:,.0f} | {plain:,.0f} | {engine / plain:.3f} |", flush=True)
    print(f"worst ratio {worst:.3f} ({'PASS' if worst >= 0.95 else 'FAIL'}: must be >= 0.95)")


if __name__ == "__main__":
    main()
