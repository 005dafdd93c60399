"""The demo the app opens first when no checkpoint is named (the main window runs this in a
worker): a shipped checkpoint, a Transformer's if there is one (it has something for every panel),
else a fresh tiny Transformer on `reverse`."""

from __future__ import annotations

from pathlib import Path


def first_demo():
    """-> a demo checkpoint folder (Path), or a fresh Workspace when none is installed."""
    from explorer.training.checkpoint import demo_checkpoints

    demos = [Path(d) for d in demo_checkpoints().values()]
    for preferred in ("transformer", "seq2seq"):
        for demo in demos:
            if preferred in demo.name:
                return demo
    if demos:
        return demos[0]
    from explorer.training.config import TrainConfig
    from explorer.training.setup import DataSpec, build_workspace

    workspace = build_workspace(DataSpec(task="reverse", n_train=1000, n_val=50), "transformer",
                                preset="tiny")
    workspace.train_config = TrainConfig(batch_size=32, eval_every=50, bleu_examples=32, lr=1e-3)
    return workspace
