"""The Qt-free training engine: configs, the Trainer generator of events, checkpoints, set-up.

    from explorer.training import DataSpec, build_workspace, TrainConfig, Trainer
    workspace = build_workspace(DataSpec(task="dates"), "seq2seq", preset="tiny")
    for event in Trainer(workspace, TrainConfig(steps=200)).run():
        ...
    save_checkpoint(workspace, "runs/dates")

Importing this package imports torch.
"""

from explorer.training.checkpoint import demo_checkpoints, load_checkpoint, save_checkpoint
from explorer.training.config import TrainConfig
from explorer.training.control import TrainerControl
from explorer.training.engine import Trainer, make_optimizer
from explorer.training.evaluation import evaluate, resolve_device
from explorer.training.schedules import learning_rate, lr_factor
from explorer.training.setup import DataSpec, build_workspace, read_data

__all__ = [
    "DataSpec", "TrainConfig", "Trainer", "TrainerControl", "build_workspace", "demo_checkpoints",
    "evaluate", "learning_rate", "load_checkpoint", "lr_factor", "make_optimizer", "read_data",
    "resolve_device", "save_checkpoint",
]
