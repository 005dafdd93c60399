"""Fine-tuning a Hugging Face model with the explorer's own Trainer, saved back as an HF folder.

    workspace = open_for_finetuning("path/to/gpt2", lambda kind: DataSpec(text="corpus.txt"))
    workspace = open_for_finetuning("path/to/opus-mt", lambda kind: DataSpec(tsv="pairs.tsv"))
    for event in Trainer(workspace, config).run(): ...
    save_hf_model(workspace, "path/to/out")                  # save_pretrained + the tokenizer

A causal LM trains like our gpt (next token on blocks of `context` tokens of the tokenizer's
stream, each line ending in the model's eos); an encoder-decoder like our seq2seq, on pairs encoded
the model's own way (explorer.hf.training). Masked LMs are not fine-tuned yet.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from explorer.data.tasks import TEXT
from explorer.errors import UserError
from explorer.families import family_of


def data_kind_of(workspace) -> str:
    """"lm" (plain text) or "seq2seq" (pairs): what the model fine-tunes on."""
    return "seq2seq" if family_of(workspace.model).has_source else "lm"


def attach_data(workspace, spec):
    """The same model (weights, optimiser state, step) with the data of `spec` to train on."""
    from explorer.training.setup import read_data

    family = family_of(workspace.model)
    if family.masked_lm:
        raise UserError(f"{workspace.model.config.path or workspace.family}: fine-tuning is built "
                        "for causal LMs and encoder-decoders; this is a masked LM")
    kind = data_kind_of(workspace)
    if spec.kind != kind:
        needs = ("plain text (--data FILE.txt)" if kind == TEXT
                 else "pairs (--data FILE.tsv, or --src and --tgt)")
        raise UserError(f"a {workspace.family} model fine-tunes on {needs}, not {spec.kind} data")
    if kind == TEXT and workspace.model.config.max_len is None:
        raise UserError(f"{workspace.model.config.path}: the model names no maximum length "
                        "(n_positions)")
    # a new Workspace around the same model: the app's current one is not changed under its readers
    return dataclasses.replace(workspace, data=read_data(spec), data_spec=spec, task=spec.task)


def open_for_finetuning(path, make_spec):
    """The HF model at `path` with the data `make_spec(kind)` describes (kind: "lm" or "seq2seq")."""
    from explorer.hf import open_hf_model

    workspace = open_hf_model(path)
    if family_of(workspace.model).masked_lm:
        return attach_data(workspace, None)  # the one-line refusal
    return attach_data(workspace, make_spec(data_kind_of(workspace)))


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
