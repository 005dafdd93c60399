"""Where every command's model comes from, in one place:

    --checkpoint DIR                                   a checkpoint or run folder (or, where the
                                                       command says so, a Hugging Face folder)
    --model FILE.py:build [--weights FILE] [--tokenizer PATH]   your own PyTorch model

`add_model_source(parser)` adds the flags; `workspace_from_args(args)` opens the workspace they
name, in eval mode; anything wrong is a one-line UserError. A run folder that `explorer train
--model` wrote records its build function (the file's path and the function's name): naming that
folder with --checkpoint on the command line names its code too, which is then imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from explorer.errors import UserError

MODEL_HELP = ("your own PyTorch model: FILE.py:function (or module:function) returning (model, "
              "tokenizer[, explorer.Adapter]); the file is imported, so name only code you trust")


def add_model_source(parser: argparse.ArgumentParser, checkpoint_help: str = "checkpoint directory",
                     required: bool = True) -> None:
    """`--checkpoint DIR`, or `--model FILE.py:build [--weights FILE] [--tokenizer PATH]`."""
    source = parser.add_mutually_exclusive_group(required=required)
    source.add_argument("--checkpoint", metavar="DIR", help=checkpoint_help)
    source.add_argument("--model", metavar="FILE.py:build", help=MODEL_HELP)
    add_user_model_files(parser)


def add_user_model_files(parser: argparse.ArgumentParser) -> None:
    """`--weights` and `--tokenizer`, which go with `--model`."""
    parser.add_argument("--weights", metavar="FILE",
                        help="with --model: the state dict, .safetensors or a torch file (read with "
                        "weights_only=True)")
    parser.add_argument("--tokenizer", metavar="PATH",
                        help="with --model, instead of build()'s tokenizer: a Hugging Face "
                        "tokenizer folder, a tokenizer.json or a vocabulary .txt (one per line)")


def check_model_source(args: argparse.Namespace) -> None:
    if getattr(args, "model", None) is None and (args.weights or args.tokenizer):
        raise UserError("--weights and --tokenizer go with --model FILE.py:build")


def model_workspace(args: argparse.Namespace):
    """The workspace of `--model` (weights and tokenizer as given), in eval mode, checked by one
    probe forward (explorer.usermodel.check.open_checked)."""
    from explorer.usermodel.check import open_checked

    check_model_source(args)
    workspace = open_checked(args.model, weights=args.weights, tokenizer=args.tokenizer)
    for note in workspace.model.notes:  # how the model was read, one line each
        print(f"explorer: note: {note}", file=sys.stderr)
    return workspace


def workspace_from_args(args: argparse.Namespace, load_data: bool = False):
    """`--checkpoint DIR` or `--model FILE.py:build [--weights] [--tokenizer]`. A checkpoint's
    training data is read only with `load_data` (decoding and scoring need none)."""
    if args.model is not None:
        return model_workspace(args)
    check_model_source(args)
    return load_workspace(args.checkpoint, load_data=load_data)


def load_workspace(directory: str, load_data: bool = False):
    """A checkpoint's workspace without its optimizer state (Adam's moments, twice the model's
    size) and, unless `load_data`, without its training data (a task's thousands of examples, a
    corpus's files); a missing or broken checkpoint is a UserError."""
    from explorer.training.checkpoint import load_checkpoint, warn_history_cut

    allow_recorded_build(directory)
    try:
        workspace = load_checkpoint(directory, load_data=load_data, load_state=False)
    except UserError:
        raise
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"cannot load checkpoint {directory}: {exc}") from exc
    warn_history_cut(directory, workspace)
    workspace.model.eval()
    return workspace


def allow_recorded_build(directory: str | Path) -> None:
    """A user model's run folder named on the command line: its recorded build function may be
    imported (said on stderr). Any other folder: nothing (load_checkpoint reads and checks it)."""
    from explorer.errors import read_json_object
    from explorer.usermodel.families import LM_FAMILIES, SEQ2SEQ_FAMILIES

    config = read_json_object(Path(directory) / "config.json") or {}
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    build = model.get("build")
    if model.get("family") in LM_FAMILIES + SEQ2SEQ_FAMILIES and isinstance(build, str) and build:
        from explorer.usermodel.loader import allow

        allow(build)
        print(f"{directory}: its model is built by your code {build}", file=sys.stderr)
