"""`explorer gui`: open the desktop app (also what `explorer` alone does)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from explorer.commands.arguments import utf8_text
    from explorer.commands.model_args import add_model_source

    add_model_source(
        parser, required=False,
        checkpoint_help="open this checkpoint folder (or Hugging Face model folder, or model id in "
        "the local HF cache) instead of the built-in demo")
    parser.add_argument("--probe", metavar="TEXT", type=utf8_text, default=None,
                        help="probe this source (or LM text) first, not the model's first "
                        "validation example")
    parser.add_argument("--probe-target", metavar="TEXT", type=utf8_text, default="",
                        help="seq2seq: the target the probe is read with")
    parser.add_argument(
        "--smoke", action="store_true",
        help="start, open the demo, train 20 steps, draw and export every panel, print a JSON "
        "report and exit (0 only if every panel drew real content without a Qt warning)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from explorer.commands.model_args import allow_recorded_build, check_model_source
    from explorer.durable import existing_folder
    from explorer.errors import UserError
    from explorer.hf.detect import (
        is_hf_model,  # a model id in the local Hugging Face cache
    )
    from explorer.training.checkpoint import check_folder

    if args.checkpoint and not is_hf_model(args.checkpoint):  # worded as decode words it
        folder = existing_folder(Path(args.checkpoint))  # as load_checkpoint finds it
        check_folder(folder)
        if not (folder / "config.json").is_file():
            raise UserError(f"{folder}: not a checkpoint (no config.json)")
    check_model_source(args)
    if args.checkpoint:
        allow_recorded_build(args.checkpoint)  # a run of your own model, named here
    model = (args.model, args.weights, args.tokenizer) if args.model else None
    from explorer.ui.app import ensure_display, run_app

    ensure_display(args.smoke)  # before Qt loads: no display is a one-line error, not a hang

    probe = None if args.probe is None else (args.probe, args.probe_target)
    return run_app(smoke=args.smoke, checkpoint=args.checkpoint, model=model, probe=probe)
