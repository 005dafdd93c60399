"""`explorer score`: teacher-forced log-probability of each target token under a checkpoint."""

from __future__ import annotations

import argparse
import json

from explorer.commands.arguments import utf8_text
from explorer.commands.model_args import add_model_source, workspace_from_args
from explorer.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_source(parser)
    parser.add_argument("--source", metavar="TEXT", type=utf8_text,
                        help="source sentence (seq2seq models); language models: omit, or a prompt")
    parser.add_argument("--target", required=True, metavar="TEXT", type=utf8_text, help="the text to score")
    parser.add_argument("--json", action="store_true",
                        help='print {"tokens": [...], "logprobs": [...], "total": float}')


def run(args) -> int:
    from explorer.decoding.scoring import score

    workspace = workspace_from_args(args)
    try:
        result = score(workspace, args.source, args.target)
    except ValueError as exc:  # e.g. a text longer than the model's positions
        raise UserError(str(exc)) from exc
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    width = max(len(token) for token in result.tokens)
    for token, logprob in zip(result.tokens, result.logprobs):
        print(f"{token:<{width}}  {logprob:9.4f}")
    print(f"{'total':<{width}}  {result.total:9.4f}")
    return 0
