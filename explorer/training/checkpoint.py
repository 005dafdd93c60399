"""Checkpoints: a directory that holds a Workspace, written atomically, read without pickle.

    config.json        model config, TrainConfig, data spec, tokenizer kinds, task, step
    model.safetensors  the weights (tied weights stored once)
    tgt_tokenizer.json / src_tokenizer.json
    optimizer.pt       optimizer state (+ RNN-LM carried state): tensors and plain containers only,
                       read with torch.load(weights_only=True), so a crafted pickle runs nothing
    metrics.jsonl      one JSON object per step: step, loss, lr, grad_norm, tokens_per_s, and the
                       evaluation fields (val_loss, perplexity, token_accuracy, bleu) when present

A save writes everything to a temporary sibling directory and renames it into place, so a crash
never leaves half a checkpoint behind.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import importlib.resources

from explorer.errors import UserError

FORMAT = "sequence-model-explorer/checkpoint/1"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
METRICS_FILE = "metrics.jsonl"


def demo_dir() -> Path:
    """The repo's resources/demo, installed as the package data of explorer.resources."""
    return Path(str(importlib.resources.files("explorer.resources") / "demo"))


def demo_checkpoints() -> dict[str, Path]:
    """Name -> directory of every pretrained demo checkpoint that ships with the app."""
    root = demo_dir()
    if not root.is_dir():
        return {}
    return {d.name: d for d in sorted(root.iterdir()) if (d / CONFIG_FILE).is_file()}


def _training_state(workspace, optimizer) -> dict[str, Any] | None:
    if optimizer is False:
        return None
    if optimizer is None:
        return workspace.training_state
    if isinstance(optimizer, dict):
        return optimizer
    return {"optimizer_name": type(optimizer).__name__.lower(), "optimizer": optimizer.state_dict()}


def _json_safe(value: Any) -> Any:
    """NaN and infinity are not JSON: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _write(workspace, folder: Path, training_state: dict | None) -> None:
    import torch
    from safetensors.torch import save_model

    from models.config import config_to_dict

    config = {
        "format": FORMAT,
        "model": config_to_dict(workspace.model.config),
        "train": None if workspace.train_config is None else workspace.train_config.to_dict(),
        "data": None if workspace.data_spec is None else workspace.data_spec.to_dict(),
        "tokenizers": {
            "tgt": workspace.tokenizer.kind,
            "src": None if workspace.src_tokenizer is None else workspace.src_tokenizer.kind,
        },
        "task": workspace.task,
        "step": workspace.step,
    }
    (folder / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_model(workspace.model, str(folder / WEIGHTS_FILE))
    workspace.tokenizer.save(folder, "tgt")
    if workspace.src_tokenizer is not None:
        workspace.src_tokenizer.save(folder, "src")
    if training_state is not None:
        from models.state import map_state

        torch.save(map_state(training_state, lambda t: t.detach().cpu()), folder / OPTIMIZER_FILE)
    with open(folder / METRICS_FILE, "w", encoding="utf-8") as out:
        for row in workspace.history:
            out.write(json.dumps({k: _json_safe(v) for k, v in row.items()}) + "\n")


def _default_permissions(folder: Path) -> None:
    """mkdtemp makes a private folder; a checkpoint gets the permissions of any new folder."""
    umask = os.umask(0)
    os.umask(umask)
    folder.chmod(0o777 & ~umask)
    for path in folder.iterdir():
        path.chmod(0o666 & ~umask)


def save_checkpoint(workspace, directory: str | Path, optimizer=None) -> Path:
    """Write `workspace` to `directory`, replacing an older checkpoint there.

    `optimizer`: a torch optimizer or a training-state dict to store; None stores the workspace's
    own `training_state` (what the Trainer left); False stores none (smaller; cannot resume
    exactly).
    """
    directory = Path(directory)
    if directory.exists() and (not directory.is_dir() or (
        any(directory.iterdir()) and not (directory / CONFIG_FILE).is_file()
    )):
        raise UserError(f"{directory}: exists and is not a checkpoint; choose another folder")
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        _write(workspace, staging, _training_state(workspace, optimizer))
        _default_permissions(staging)
        if directory.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
            directory.rename(retired / "checkpoint")
            staging.rename(directory)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            staging.rename(directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory


def _read_config(directory: Path) -> dict[str, Any]:
    path = directory / CONFIG_FILE
    if not directory.is_dir():
        raise UserError(f"{directory}: no such checkpoint folder")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{directory}: not a checkpoint (no {CONFIG_FILE})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise UserError(f"{path}: not a Sequence Model Explorer checkpoint")
    return config


def load_training_state(path: Path) -> dict[str, Any]:
    """optimizer.pt through torch's weights-only unpickler: tensors and containers, never code."""
    import warnings

    import torch

    try:
        with warnings.catch_warnings():  # the unpickler's protocol notes: the error below suffices
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure means the file cannot be trusted
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{path}: refused to load, not a plain tensor file ({reason})") from None


def _read_history(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError:
                raise UserError(f"{path}:{number}: not a JSON object") from None
    return rows


def load_checkpoint(directory: str | Path, load_data: bool = True, load_state: bool = True):
    """The Workspace saved in `directory`; its data is rebuilt from the saved data spec when the
    task or the files are still available (otherwise `workspace.data` is None). Without
    `load_state` the optimizer's state (twice the model's size with Adam) stays on disk."""
    from safetensors.torch import load_model

    from explorer.data.tokenizers import load_tokenizer
    from explorer.training.config import TrainConfig
    from explorer.training.setup import DataSpec, read_data
    from explorer.workspace import Workspace
    from models.config import build_model, config_from_dict

    directory = Path(directory)
    config = _read_config(directory)
    try:
        model = build_model(config_from_dict(config["model"]))
        load_model(model, str(directory / WEIGHTS_FILE), strict=True)
    except FileNotFoundError:
        raise UserError(f"{directory}: the checkpoint has no {WEIGHTS_FILE}") from None
    except Exception as exc:  # noqa: BLE001 - wrong shapes, bad header, unknown config fields
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"{directory}: cannot load the model ({reason})") from None
    model.eval()
    tokenizer = load_tokenizer(directory, "tgt")
    src_tokenizer = load_tokenizer(directory, "src") if config["tokenizers"].get("src") else None
    train = config.get("train")
    spec = DataSpec.from_dict(config["data"]) if config.get("data") else None
    data = None
    if spec is not None and load_data:
        try:
            data = read_data(spec)
        except UserError:
            data = None  # the files moved: the model still opens, training needs new data
    optimizer_path = directory / OPTIMIZER_FILE
    return Workspace(
        model=model,
        tokenizer=tokenizer,
        src_tokenizer=src_tokenizer,
        task=config.get("task"),
        data=data,
        train_config=None if train is None else TrainConfig.from_dict(train),
        step=int(config.get("step", 0)),
        history=_read_history(directory / METRICS_FILE),
        training_state=(load_training_state(optimizer_path)
                        if load_state and optimizer_path.is_file() else None),
        data_spec=spec,
    )
