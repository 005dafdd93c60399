"""Fine-tuning a Hugging Face causal LM with the explorer's own Trainer, saved back as an HF folder.

    workspace = open_for_finetuning("path/to/gpt2", DataSpec(text="corpus.txt"))
    for event in Trainer(workspace, config).run(): ...      # hf-causal-lm: block_loss, BlockFeed
    save_hf_model(workspace, "path/to/out")                  # save_pretrained + the tokenizer

The text is the tokenizer's stream, each line ending in the model's eos; the loss is next-token
cross-entropy on blocks of `context` tokens, as for our gpt family.
"""

from __future__ import annotations

from pathlib import Path

from explorer.errors import UserError
from explorer.families import family_of


def open_for_finetuning(path, spec):
    """The HF causal LM at `path` with the text data of `spec` (a DataSpec with text=FILE)."""
    from explorer.hf import open_hf_model
    from explorer.training.setup import read_data

    workspace = open_hf_model(path)
    family = family_of(workspace.model)
    if family.has_source or family.masked_lm:  # only a model that continues text trains on text
        raise UserError(f"{path}: fine-tuning is built for causal LMs (GPT-2, ...); this is a "
                        f"{workspace.family} model")
    if spec.text is None:
        raise UserError("--from fine-tunes on plain text: give --data FILE.txt")
    if workspace.model.config.max_len is None:
        raise UserError(f"{path}: the model names no maximum length (n_positions)")
    workspace.data, workspace.data_spec = read_data(spec), spec
    return workspace


def save_hf_model(workspace, directory) -> Path:
    """`save_pretrained` of the model and its tokenizer into `directory`, replaced atomically
    (explorer.durable), so a crash leaves the old folder whole."""
    from explorer.durable import replace_folder
    from explorer.hf.detect import is_hf_model

    directory = Path(directory)
    if directory.exists() and (not directory.is_dir() or (
        any(directory.iterdir()) and not is_hf_model(directory)
    )):
        raise UserError(f"{directory}: exists and is not a Hugging Face model folder; choose another")

    def write(staging: Path) -> None:
        workspace.model.hf.save_pretrained(staging)
        workspace.tokenizer.hf.save_pretrained(staging)

    return replace_folder(directory, write)
