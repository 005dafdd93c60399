"""Argument types shared by the sub-commands."""

from __future__ import annotations

import argparse


def utf8_text(value: str) -> str:
    """A text argument. Python keeps bytes that are not UTF-8 as lone surrogates; a model would see
    them as <unk> tokens without a word, so they are refused (file paths, which may hold such
    bytes, do not use this type)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{value.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8") from None
    return value


MODEL_HELP = ("your own PyTorch model: FILE.py:function (or module:function) returning (model, "
              "tokenizer[, explorer.Adapter]); the file is imported, so name only code you trust")


def add_model_source(parser: argparse.ArgumentParser, checkpoint_help: str = "checkpoint directory",
                     required: bool = True) -> None:
    """`--checkpoint DIR`, or `--model FILE.py:build [--weights FILE] [--tokenizer PATH]`."""
    source = parser.add_mutually_exclusive_group(required=required)
    source.add_argument("--checkpoint", metavar="DIR", help=checkpoint_help)
    source.add_argument("--model", metavar="FILE.py:build", help=MODEL_HELP)
    parser.add_argument("--weights", metavar="FILE",
                        help="with --model: the state dict, .safetensors or a torch file (read with "
                        "weights_only=True)")
    parser.add_argument("--tokenizer", metavar="PATH",
                        help="with --model, instead of build()'s tokenizer: a Hugging Face "
                        "tokenizer folder, a tokenizer.json or a vocabulary .txt (one per line)")


def check_model_source(args: argparse.Namespace) -> None:
    from explorer.errors import UserError

    if getattr(args, "model", None) is None and (args.weights or args.tokenizer):
        raise UserError("--weights and --tokenizer go with --model FILE.py:build")


def model_workspace(args: argparse.Namespace):
    """The workspace of `--model` (weights and tokenizer as given), in eval mode."""
    from explorer.usermodel.loader import open_model_file

    import sys

    check_model_source(args)
    workspace = open_model_file(args.model, weights=args.weights, tokenizer=args.tokenizer)
    for note in workspace.model.notes:  # how the model was read, one line each
        print(f"explorer: note: {note}", file=sys.stderr)
    return workspace
