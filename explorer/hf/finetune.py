"""Fine-tuning a Hugging Face causal LM with the explorer's own Trainer, saved back as an HF folder.

    workspace = open_for_finetuning("path/to/gpt2", DataSpec(text="corpus.txt"))
    for event in Trainer(workspace, config).run(): ...      # hf-causal-lm: block_loss, BlockFeed
    save_hf_model(workspace, "path/to/out")                  # save_pretrained + the tokenizer

The text is the tokenizer's stream, each line ending in the model's eos; the loss is next-token
cross-entropy on blocks of `context` tokens, as for our gpt family.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from explorer.errors import UserError


def open_for_finetuning(path, spec):
    """The HF causal LM at `path` with the text data of `spec` (a DataSpec with text=FILE)."""
    from explorer.hf import open_hf_model
    from explorer.training.setup import read_data

    workspace = open_hf_model(path)
    if workspace.family != "hf-causal-lm":
        raise UserError(f"{path}: fine-tuning is built for causal LMs (GPT-2, ...); this is a "
                        f"{workspace.family} model")
    if spec.text is None:
        raise UserError("--from fine-tunes on plain text: give --data FILE.txt")
    if workspace.model.config.max_len is None:
        raise UserError(f"{path}: the model names no maximum length (n_positions)")
    workspace.data, workspace.data_spec = read_data(spec), spec
    return workspace


def save_hf_model(workspace, directory) -> Path:
    """`save_pretrained` of the model and its tokenizer into `directory`, written to a temporary
    sibling first and renamed into place, so a crash leaves the old folder whole."""
    from explorer.hf.detect import is_hf_model

    directory = Path(directory)
    if directory.exists() and (not directory.is_dir() or (
        any(directory.iterdir()) and not is_hf_model(directory)
    )):
        raise UserError(f"{directory}: exists and is not a Hugging Face model folder; choose another")
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        workspace.model.hf.save_pretrained(staging)
        workspace.tokenizer.hf.save_pretrained(staging)
        if directory.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old-", dir=directory.parent))
            directory.rename(retired / "model")
            staging.rename(directory)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            staging.rename(directory)
        umask = os.umask(0)
        os.umask(umask)
        directory.chmod(0o777 & ~umask)  # mkdtemp's folder is private; give it a new folder's mode
        for path in directory.iterdir():
            path.chmod(0o666 & ~umask)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory
