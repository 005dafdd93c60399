"""Checkpoints: a directory that holds a Workspace, written atomically, read without pickle.

    config.json        model config, TrainConfig, data spec, tokenizer kinds, task, step
    model.safetensors  the weights (tied weights stored once)
    tgt_tokenizer.json / src_tokenizer.json
    optimizer.pt       optimizer state (+ RNN-LM carried state): tensors and plain containers only,
                       read with torch.load(weights_only=True), so a crafted pickle runs nothing
    metrics.jsonl      one JSON object per step: step, loss, lr, grad_norm, tokens_per_s, and the
                       evaluation fields (val_loss, perplexity, token_accuracy, bleu) when present;
                       in a run folder (explorer.runs) it is the run's append-only file, with event
                       rows and rows past `step` (loading resolves both, and skips a torn last line)

A save writes everything to a staging folder beside the checkpoint, fsyncs it and swaps it into
place (explorer.durable.replace_folder), under a FolderLock: a kill at any moment leaves the old
checkpoint or the new one, never half of one, and two processes never write one folder together.
A run folder's top-level checkpoint is saved by its RunWriter instead (explorer/runs/writer.py),
which keeps the run's metrics.jsonl and snapshots/.
Loading checks every field and the weights file's header before it allocates anything.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import importlib.resources

from explorer.durable import (FolderLock, existing_folder, read_jsonl_skipping, replace_folder,
                              write_jsonl)
from explorer.errors import UserError, first_line, read_json
from explorer.families import family_of, family_opening

FORMAT = "sequence-model-explorer/checkpoint/1"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
METRICS_FILE = "metrics.jsonl"


def demo_dir() -> Path:
    """The repo's resources/demo, installed as the package data of explorer.resources."""
    try:
        return Path(str(importlib.resources.files("explorer.resources") / "demo"))
    except ModuleNotFoundError:  # a source checkout on PYTHONPATH, not installed: the repo's own copy
        return Path(__file__).resolve().parents[2] / "resources" / "demo"


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


def data_digests(workspace) -> dict[str, str]:
    """sha256 of every data file the workspace's data was read from."""
    digests: dict[str, str] = {}
    for report in getattr(workspace.data, "reports", None) or ():
        digests.update(getattr(report, "digests", {}))
    return digests


def changed_data_files(directory: str | Path, workspace) -> list[str]:
    """The data files whose content differs from when the checkpoint in `directory` was saved
    (compared with what `load_checkpoint` just read). Older checkpoints recorded none."""
    config = _read_config(existing_folder(Path(directory)))
    recorded = config.get("data_digests")
    if not isinstance(recorded, dict):
        return []
    now = data_digests(workspace)
    return sorted(path for path, digest in recorded.items() if now.get(path, digest) != digest)


def history_cut(workspace) -> str | None:
    """What the checkpoint's metrics.jsonl lacks, in one line: "line 21 is not a JSON object,
    skipped" for damaged lines (left out of the history, the curves and what a resume appends),
    and "history cut at step N while the checkpoint is at step M" when it ends before its weights
    (a torn copy, a full disk, a file cut by hand): the curves, a resumed history and replay would
    silently miss steps N+1..M. None when whole."""
    from explorer.history import bad_lines_note

    notes = [bad_lines_note(workspace.history_bad_lines)] if workspace.history_bad_lines else []
    last = workspace.history[-1]["step"] if workspace.history else 0
    if last < workspace.step:
        notes.append(f"history cut at step {last} while the checkpoint is at step {workspace.step}")
    return "; ".join(notes) or None


def warn_history_cut(directory: str | Path, workspace, stream=None) -> None:
    """The CLI's warning line for `history_cut` (decode, score, export, train --resume)."""
    import sys

    cut = history_cut(workspace)
    if cut is not None:
        (stream or sys.stderr).write(f"warning: {Path(directory) / METRICS_FILE}: {cut}\n")


def check_resumable(directory: str | Path, workspace, stream=None) -> None:
    """Before a loaded checkpoint trains on: a UserError naming the data file that cannot be
    read, and a warning line for each data file that changed since the save."""
    import sys

    from explorer.training.setup import read_data

    if workspace.data is None:
        reason = "it was never recorded"
        if workspace.data_spec is not None:
            try:
                read_data(workspace.data_spec)
            except UserError as exc:
                reason = str(exc)
        raise UserError(f"{directory}: cannot read its training data ({reason})")
    warn_history_cut(directory, workspace, stream)  # resumed, the history would have a hole
    for path in changed_data_files(directory, workspace):
        (stream or sys.stderr).write(
            f"data: warning: {path} changed since {directory} was saved; training goes on with "
            "its new content (the vocabulary stays: new symbols become <unk>)\n")


def _write(workspace, folder: Path, training_state: dict | None,
           extra: dict | None = None) -> None:
    import torch
    from safetensors.torch import save_model

    from seqmodels.config import config_to_dict

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
        "data_digests": data_digests(workspace),
        **(extra or {}),  # a run folder's "run" section
    }
    (folder / CONFIG_FILE).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    save_model(workspace.model, str(folder / WEIGHTS_FILE))
    workspace.tokenizer.save(folder, "tgt")
    if workspace.src_tokenizer is not None:
        workspace.src_tokenizer.save(folder, "src")
    if training_state is not None:
        from seqmodels.state import map_state

        torch.save(map_state(training_state, lambda t: t.detach().cpu()), folder / OPTIMIZER_FILE)
    write_jsonl(folder / METRICS_FILE, workspace.history)


def check_can_save(directory: Path) -> None:
    """A save replaces the folder as a whole: refuse one that holds anything but a checkpoint."""
    if directory.exists() and (not directory.is_dir() or (
        any(directory.iterdir()) and not (directory / CONFIG_FILE).is_file()
    )):
        raise UserError(f"{directory}: exists and is not a checkpoint; choose another folder")


def save_checkpoint(workspace, directory: str | Path, optimizer=None) -> Path:
    """Write `workspace` to `directory`, replacing an older checkpoint there.

    `optimizer`: a torch optimizer or a training-state dict to store; None stores the workspace's
    own `training_state` (what the Trainer left); False stores none (smaller; cannot resume
    exactly).
    """
    from explorer.history import is_run_folder  # replacing it would lose its snapshots

    directory = Path(directory)
    save_as = family_of(workspace.model).save
    if save_as is not None:  # e.g. a Hugging Face model: save_pretrained and its tokenizer
        return save_as(workspace, directory)
    check_can_save(directory)
    if is_run_folder(directory):
        raise UserError(f"{directory}: holds a training run; save the checkpoint elsewhere")
    return save_folder(workspace, directory, optimizer)


def save_folder(workspace, directory: Path, optimizer=None, named: Path | None = None,
                extra: dict | None = None) -> Path:
    """The atomic part of a save: `directory` is replaced whole, under its FolderLock; `extra`
    joins config.json. A failure is a UserError naming `named` (default: `directory`); what was
    there stays."""
    state = _training_state(workspace, optimizer)
    try:
        with FolderLock(directory):
            replace_folder(directory, lambda staging: _write(workspace, staging, state, extra))
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            reason = "the disk is full"
        else:
            reason = exc.strerror or first_line(exc)
        raise UserError(f"{named or directory}: cannot save the checkpoint ({reason}); the "
                        "previous checkpoint there is unchanged") from None
    return directory


def check_folder(directory: Path) -> None:
    """A UserError unless `directory` is a folder: a file given instead is named as one."""
    if directory.is_dir():
        return
    if directory.exists():
        raise UserError(f"{directory}: is a file, not a checkpoint folder")
    raise UserError(f"{directory}: no such checkpoint folder")


def _read_config(directory: Path) -> dict[str, Any]:
    path = directory / CONFIG_FILE
    check_folder(directory)
    config = read_json(path, missing=f"{directory}: not a checkpoint (no {CONFIG_FILE})")
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise UserError(f"{path}: not a Sequence Model Explorer checkpoint")
    _check_shape_of_config(config, path)
    return config


def _check_shape_of_config(config: dict, path: Path) -> None:
    """Every section has the type the loader expects (a crafted file must not crash it)."""
    def bad(what: str) -> UserError:
        return UserError(f"{path}: {what}")

    if not isinstance(config.get("model"), dict):
        raise bad("'model' must be a JSON object")
    tokenizers = config.get("tokenizers")
    if not isinstance(tokenizers, dict) or not isinstance(tokenizers.get("tgt"), str):
        raise bad("'tokenizers' must name the target tokenizer")
    if not isinstance(tokenizers.get("src"), (str, type(None))):
        raise bad("'tokenizers.src' must be a tokenizer name or null")
    for section in ("train", "data"):
        if not isinstance(config.get(section), (dict, type(None))):
            raise bad(f"'{section}' must be a JSON object or null")
    digests = config.get("data_digests", {})
    if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
        raise bad("'data_digests' must map file names to sha256 digests")
    if not isinstance(config.get("task"), (str, type(None))):
        raise bad("'task' must be a task name or null")
    step = config.get("step", 0)
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise bad(f"'step' must be a whole number >= 0, got {step!r}")
    for name, value in (config.get("data") or {}).items():
        expected = (int, float) if name == "val_fraction" else (
            int if name in ("vocab_size", "seed", "n_train", "n_val") else str)
        if value is not None and (not isinstance(value, expected) or isinstance(value, bool)):
            raise bad(f"data field {name!r} has the wrong type ({type(value).__name__})")


def load_training_state(path: Path) -> dict[str, Any]:
    """optimizer.pt through torch's weights-only unpickler: tensors and containers, never code."""
    from explorer.tensor_file import load_tensors

    return load_tensors(path)


def _read_history(path: Path, rows: list[dict] | None = None) -> tuple[list[dict], tuple[int, ...]]:
    """(metrics.jsonl in a Workspace's history format: one row per step, its evaluation merged in,
    the numbers of the lines that are not JSON objects). A run's event rows and the steps a
    --resume redid are resolved by history_from_rows; a torn last line and damaged lines are left
    out (decoding needs no history: a bad line must not lock the model). Steps must increase,
    within each training segment of a run."""
    from explorer.history import history_from_rows

    bad: list[int] = []
    if rows is None:  # (rows: a run reader's, already parsed)
        rows, bad = read_jsonl_skipping(path)
    last = 0
    for number, row in enumerate(rows, 1):
        step, event = row.get("step"), row.get("event")
        if event not in (None, "eval", "resumed"):
            continue  # started, snapshot, finished: nothing the history needs
        if not isinstance(step, int) or isinstance(step, bool) or step < 0 or (
                event is None and step <= last) or (event == "eval" and step > last):
            raise UserError(f"{path}: row {number} has step {step!r}; steps must increase")
        if event is None or event == "resumed":
            last = step
    return history_from_rows(rows), tuple(bad)


def load_checkpoint(directory: str | Path, load_data: bool = True, load_state: bool = True,
                    metrics_rows: list[dict] | None = None):
    """The Workspace saved in `directory`; its data is rebuilt from the saved data spec when the
    task or the files are still available (otherwise `workspace.data` is None). Without
    `load_state` the optimizer's state (twice the model's size with Adam) stays on disk.
    `metrics_rows`: its metrics.jsonl already parsed (a run's reader), not read a second time."""
    from safetensors.torch import load_model

    from explorer.data.tokenizers import load_tokenizer
    from explorer.training.config import TrainConfig
    from explorer.training.setup import DataSpec, read_data
    from explorer.training.weights_file import check_against_config, check_field_types
    from explorer.workspace import Workspace
    from seqmodels.config import build_model, config_from_dict

    own_format = family_opening(directory)
    if own_format is not None:  # e.g. a Hugging Face folder or cached model id
        return own_format.load(directory)
    directory = existing_folder(Path(directory))
    config = _read_config(directory)
    load = _family_loader(config)
    if load is not None:  # e.g. a user model: its own code rebuilds it
        return load(directory, load_state=load_state, metrics_rows=metrics_rows)
    try:
        model_config = config_from_dict(config["model"])
    except Exception as exc:  # noqa: BLE001 - unknown family or fields, values validate rejects
        reason = first_line(exc)
        raise UserError(f"{directory / CONFIG_FILE}: bad model config ({reason})") from None
    try:
        check_field_types(model_config)
    except UserError as exc:
        raise UserError(f"{directory / CONFIG_FILE}: {exc}") from None
    check_against_config(directory / WEIGHTS_FILE, model_config)  # before any allocation
    try:
        model = build_model(model_config)
        load_model(model, str(directory / WEIGHTS_FILE), strict=True)
    except Exception as exc:  # noqa: BLE001 - whatever the checks above could not foresee
        reason = first_line(exc)
        raise UserError(f"{directory}: cannot load the model ({reason})") from None
    model.eval()
    tokenizer = load_tokenizer(directory, "tgt")
    src_tokenizer = load_tokenizer(directory, "src") if config["tokenizers"].get("src") else None
    _check_vocabularies(directory, model_config, tokenizer, src_tokenizer)
    train = config.get("train")
    try:  # their own checks, with the file named
        spec = DataSpec.from_dict(config["data"]) if config.get("data") else None
        train_config = None if train is None else TrainConfig.from_dict(train)
    except UserError as exc:
        raise UserError(f"{directory / CONFIG_FILE}: {exc}") from None
    data = None
    if spec is not None and load_data:
        try:
            data = read_data(spec)
        except UserError:
            data = None  # the files moved: the model still opens, training needs new data
    optimizer_path = directory / OPTIMIZER_FILE
    step = config.get("step", 0)
    history, bad_lines = _read_history(directory / METRICS_FILE, metrics_rows)
    return Workspace(
        model=model,
        tokenizer=tokenizer,
        src_tokenizer=src_tokenizer,
        task=config.get("task"),
        data=data,
        train_config=train_config,
        step=step,
        # rows a running `--save-every` appended after this step belong to no checkpoint
        history=[r for r in history if r["step"] <= step],
        history_bad_lines=bad_lines,
        training_state=(load_training_state(optimizer_path)
                        if load_state and optimizer_path.is_file() else None),
        data_spec=spec,
    )


def _family_loader(config: dict):
    from explorer.families import get_family

    name = config["model"].get("family") if isinstance(config.get("model"), dict) else None
    if not isinstance(name, str):
        return None  # config_from_dict says what is wrong with it below
    try:
        family = get_family(name)
    except UserError:
        return None  # an unknown family: config_from_dict says so below
    return family.load if family.opens is None else None  # `opens` families were asked first


def _check_vocabularies(directory: Path, model_config, tokenizer, src_tokenizer) -> None:
    sides = [("target", model_config.vocab_size, tokenizer)]
    if family_of(model_config).has_source:
        if src_tokenizer is None:
            raise UserError(f"{directory}: a {model_config.family} model needs src_tokenizer.json")
        sides.append(("source", model_config.src_vocab_size, src_tokenizer))
    for side, size, side_tokenizer in sides:
        if side_tokenizer.vocab_size != size:
            raise UserError(f"{directory}: the {side} tokenizer has {side_tokenizer.vocab_size} "
                            f"tokens, the model {size}")
