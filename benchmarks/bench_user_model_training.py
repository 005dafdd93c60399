"""Training a user's own model (issue 33): tokens/s of the explorer's trainer on the example models
of models/ (opened as `--model FILE.py:build`, behind the adapter) against a plain PyTorch loop on
the same module, batches and threads, in alternating rounds so machine load affects both alike.

    python benchmarks/bench_user_model_training.py [--rounds 6] [--steps 20] [--threads 1] [--app]
                                                   [--reference]

headless: the engine's `Trainer.run()` against the plain loop (draw the batch, the user's own
forward, cross-entropy, zero_grad, backward, clip_grad_norm_, optimizer step, loss.item()).
--app: the same engine inside the real main window (worker thread, panels live, the probe on, the
run recorded) for rounds x steps, the plain loop's rounds half before and half after it, as
bench_gui.py measures the app. Target: ratio >= 0.95.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from explorer.data.batching import IGNORE_INDEX  # noqa: E402
from explorer.events import StepMetrics  # noqa: E402
from explorer.training import DataSpec, TrainConfig, Trainer  # noqa: E402
from explorer.training.engine import make_optimizer  # noqa: E402
from explorer.training.feeds import make_feed  # noqa: E402
from explorer.usermodel.training import attach_data  # noqa: E402
from explorer.usermodel.check import open_checked  # noqa: E402

CASES = {
    # nanoGPT's CPU recipe's size, as bench_engine_overhead's gpt case
    "char_gpt.py 4x128, context 64, batch 12": dict(
        build="char_gpt.py:build", data=DataSpec(task="brackets"),
        train=dict(batch_size=12, context=64)),
    "gru_translator.py 64, reverse, batch 32": dict(
        build="gru_translator.py:build", data=DataSpec(task="reverse"), train=dict(batch_size=32)),
}
# --reference: the project's own gpt of the same size, measured the same way (what the app costs
# any model on this machine, beside what it costs a user's)
REFERENCE = {
    "built-in gpt 4x128, context 64, batch 12": dict(
        family="gpt", data=DataSpec(task="brackets"), train=dict(batch_size=12, context=64),
        model=dict(d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.0, max_len=64)),
}


def user_workspace(case: dict):
    torch.manual_seed(0)
    if "family" in case:
        from explorer.training import build_workspace

        return build_workspace(case["data"], case["family"], **case["model"])
    workspace = open_checked(str(ROOT / "models" / case["build"]))
    if case["build"].startswith("char_gpt"):  # the CPU recipe's depth: 4 layers of 128
        from explorer.usermodel.loader import make_workspace

        module = sys.modules[type(workspace.model.inner).__module__]
        model = module.GPT(module.GPTConfig(n_layer=4, n_embd=128))
        workspace = make_workspace(model, module.VOCAB, module.explorer.Adapter(
            split="chars", max_len=128), build=workspace.model.config.build, args={})
    return attach_data(workspace, case["data"])


def plain_steps(model, optimizer, feed, first: int, steps: int, clip: float) -> int:
    """The user's module trained as its own loop would: its forward, cross-entropy, the update."""
    tokens = 0
    for step in range(first, first + steps):
        batch = feed.train_batch(step)
        if batch.src is not None:
            logits, targets = model(batch.src, batch.tgt_in), batch.tgt_out
        else:
            logits, targets = model(batch.tokens), batch.targets
        logits = logits[0] if isinstance(logits, tuple) else logits  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        loss.item()
        tokens += batch.num_target_tokens if batch.tokens is None else batch.tokens.numel()
    return tokens


def plain_side(workspace, config):
    model = copy.deepcopy(getattr(workspace.model, "inner", workspace.model)).train()
    return model, make_optimizer(model, config), make_feed(workspace, config)


def headless(case: dict, rounds: int, steps: int, threads: int) -> tuple[float, float]:
    workspace = user_workspace(case)
    config = TrainConfig(steps=10**9, eval_every=0, num_threads=threads, lr=1e-3, **case["train"])
    model, optimizer, feed = plain_side(workspace, config)
    events = Trainer(workspace, config).run()

    def engine_round() -> tuple[int, float]:
        tokens, done, started = 0, 0, time.perf_counter()
        while done < steps:
            event = next(events)
            if isinstance(event, StepMetrics):
                tokens, done = tokens + event.tokens, done + 1
        return tokens, time.perf_counter() - started

    engine_round()  # warm-up on both sides
    plain_steps(model, optimizer, feed, 1, steps, config.clip)
    engine = [0, 0.0]
    plain = [0, 0.0]
    for r in range(rounds):
        for which in (("engine", "plain") if r % 2 == 0 else ("plain", "engine")):
            if which == "engine":
                tokens, seconds = engine_round()
            else:
                started = time.perf_counter()
                tokens = plain_steps(model, optimizer, feed, steps * (r + 1) + 1, steps, config.clip)
                seconds = time.perf_counter() - started
            side = engine if which == "engine" else plain
            side[0], side[1] = side[0] + tokens, side[1] + seconds
    events.close()
    return engine[0] / engine[1], plain[0] / plain[1]


def in_app(case: dict, rounds: int, steps: int, threads: int) -> tuple[float, float]:
    """Tokens/s of one run of rounds x steps in the real window, from its first step's batch to
    its last (the feed's set-up before the first step is not training), against the plain loop's
    rounds run before and after it (as bench_gui.py's throughput)."""
    import tempfile

    from PySide6.QtCore import QSettings

    from explorer.ui.app import create_application
    from explorer.ui.main_window import MainWindow

    app = create_application()
    tmp = tempfile.mkdtemp(prefix="bench-user-model-")
    settings = QSettings(f"{tmp}/settings.ini", QSettings.Format.IniFormat)
    settings.setValue("runs/data_dir", tmp)  # the run the training records: not the user's
    window = MainWindow(settings=settings, load_demo=False)
    window.resize(1400, 900)
    window.show()
    workspace = user_workspace(case)
    config = TrainConfig(eval_every=0, num_threads=threads, lr=1e-3, **case["train"])
    workspace.train_config = config
    window.controller.set_workspace(workspace)
    while window.controller.jobs.busy:
        app.processEvents()
    seen = {"tokens": 0, "first": None, "last": None}

    def on_steps(batch) -> None:
        now = time.perf_counter()
        if seen["first"] is None:  # the clock starts when the first batch of steps arrives
            seen["first"] = now
        else:
            seen["tokens"] += sum(s.tokens for s in batch)
        seen["last"] = now

    window.bus.step_metrics.connect(on_steps)
    window.controller.training_finished.connect(lambda _: app.quit())
    model, optimizer, feed = plain_side(workspace, config)
    torch.set_num_threads(threads)
    plain_steps(model, optimizer, feed, 1, steps, config.clip)  # warm-up
    plain_rates = []

    def plain_round(first: int) -> None:
        torch.set_num_threads(threads)
        started = time.perf_counter()
        tokens = plain_steps(model, optimizer, feed, first, steps, config.clip)
        plain_rates.append(tokens / (time.perf_counter() - started))

    for r in range(rounds // 2):
        plain_round(steps * (r + 1) + 1)
    window.controller.train(steps=rounds * steps)
    app.exec()
    app_rate = seen["tokens"] / (seen["last"] - seen["first"])
    for r in range(rounds // 2, rounds):
        plain_round(steps * (r + 1) + 1)
    window.close()
    return app_rate, statistics.median(plain_rates)


def main() -> None:
    parser = argparse.ArgumentParser(description="a user's model: the explorer's trainer vs a plain loop")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20, help="steps per round and side")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--app", action="store_true", help="also train inside the real window")
    parser.add_argument("--reference", action="store_true",
                        help="also the project's own gpt of the same size")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"| model | where | explorer tok/s | plain tok/s | ratio |  ({args.rounds} rounds x "
          f"{args.steps} steps each side, {args.threads} thread(s), torch {torch.__version__}, "
          f"load {os.getloadavg()[0]:.2f})")
    print("|---|---|---:|---:|---:|")
    worst = float("inf")
    for name, case in {**CASES, **(REFERENCE if args.reference else {})}.items():
        sides = [("headless", headless)] + ([("in the app", in_app)] if args.app else [])
        for where, measure in sides:
            explorer_rate, plain_rate = measure(case, args.rounds, args.steps, args.threads)
            worst = min(worst, explorer_rate / plain_rate)
            print(f"| {name} | {where} | {explorer_rate:,.0f} | {plain_rate:,.0f} | "
                  f"{explorer_rate / plain_rate:.3f} |", flush=True)
    print(f"worst ratio {worst:.3f} ({'PASS' if worst >= 0.95 else 'FAIL'}: must be >= 0.95); "
          f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
