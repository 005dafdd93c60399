"""Train the two demo checkpoints that ship with the app (resources/demo/, installed as explorer.resources).

    python scripts/make_demo_checkpoints.py            # both, ~3 min each on one CPU thread
    python scripts/make_demo_checkpoints.py --only dates-gru-additive --minutes 1

Each is trained on its built-in task with a fixed seed, evaluated (token accuracy, exact-match
accuracy of greedy decodes, corpus BLEU) and saved without optimizer state, to stay under 2 MB.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.decoding.search import greedy_batch  # noqa: E402
from explorer.events import EvalMetrics, StepMetrics  # noqa: E402
from explorer.training import (  # noqa: E402
    DataSpec, TrainConfig, Trainer, build_workspace, save_checkpoint,
)
from explorer.training.checkpoint import demo_dir  # noqa: E402
from seqmodels.config import EOS_ID, count_parameters  # noqa: E402

DEMOS = {
    "dates-gru-additive": dict(
        data=DataSpec(task="dates"),
        family="seq2seq",
        model=dict(cell="gru", attention="additive", embed_dim=32, hidden_size=96),
        train=TrainConfig(steps=600, batch_size=64, lr=3e-3, schedule="cosine", warmup=50,
                          eval_every=200, bleu_examples=100),
    ),
    "translate-toy-transformer": dict(
        data=DataSpec(task="translate-toy"),
        family="transformer",
        model=dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.1, max_len=64),
        train=TrainConfig(steps=800, batch_size=64, lr=2e-3, schedule="noam", warmup=150,
                          label_smoothing=0.1, eval_every=200, bleu_examples=100),
    ),
}


def exact_match(workspace, pairs) -> float:
    """Share of validation sources whose greedy decode equals the reference exactly."""
    contexts = [workspace.src_tokenizer.encode(src) + [EOS_ID] for src, _ in pairs]
    hyps = greedy_batch(workspace.model, contexts, max_len=64, tokenizer=workspace.tokenizer)
    return sum(h.text == ref for h, (_, ref) in zip(hyps, pairs)) / len(pairs)


def make(name: str, minutes: float, out_root: Path) -> None:
    recipe = DEMOS[name]
    torch.manual_seed(0)
    workspace = build_workspace(recipe["data"], recipe["family"], **recipe["model"])
    trainer = Trainer(workspace, recipe["train"])
    print(f"{name}: {count_parameters(workspace.model):,} parameters", flush=True)
    started = time.perf_counter()
    for event in trainer.run():
        if isinstance(event, StepMetrics) and time.perf_counter() - started > 60 * minutes:
            trainer.control.stop()  # the time budget is spent: stop after this step
        if isinstance(event, EvalMetrics):
            print(f"  step {event.step}: val loss {event.val_loss:.3f}, token accuracy "
                  f"{100 * event.token_accuracy:.1f}%, BLEU {event.bleu:.1f} "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
    if workspace.history and "bleu" not in workspace.history[-1]:
        from explorer.training import evaluate  # stopped between evaluations: evaluate once more

        final = evaluate(workspace)
        workspace.history[-1].update(val_loss=final.val_loss, perplexity=final.perplexity,
                                     token_accuracy=final.token_accuracy, bleu=final.bleu)
        print(f"  final: val loss {final.val_loss:.3f}, BLEU {final.bleu:.1f}")
    accuracy = exact_match(workspace, workspace.data.val[:200])
    print(f"  exact-match accuracy of greedy decodes on 200 val sources: {100 * accuracy:.1f}%")
    # saved for whoever trains it further: any device, the app's background thread count
    workspace.train_config = dataclasses.replace(workspace.train_config, device="auto",
                                                 num_threads=1)
    folder = save_checkpoint(workspace, out_root / name, optimizer=False)
    size = sum(p.stat().st_size for p in folder.iterdir())
    print(f"  wrote {folder} ({size / 1e6:.2f} MB) after {time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(DEMOS), help="make just this one")
    parser.add_argument("--minutes", type=float, default=3.5, help="time budget per checkpoint")
    parser.add_argument("--out", type=Path, default=demo_dir(), help="folder of the demos")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (shared machine: 1)")
    args = parser.parse_args()
    for recipe in DEMOS.values():
        recipe["train"].num_threads = args.threads
        recipe["train"].device = "cpu"
    for name in [args.only] if args.only else list(DEMOS):
        make(name, args.minutes, args.out)


if __name__ == "__main__":
    main()
