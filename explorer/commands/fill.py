"""`explorer fill`: a masked language model's top-k tokens for every [MASK] in a text."""

from __future__ import annotations

import argparse
import json

from explorer.commands.arguments import utf8_text
from explorer.commands.model_args import add_model_source, workspace_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_source(parser, "a bert checkpoint or a Hugging Face masked-LM folder (BERT, "
                     "DistilBERT)")
    parser.add_argument("--top-k", type=int, default=5, metavar="K",
                        help="most probable tokens shown per mask (default 5)")
    parser.add_argument("--json", action="store_true",
                        help="print JSON: tokens, and per mask its position and predictions")
    parser.add_argument("text", metavar="TEXT", type=utf8_text,
                        help='text with [MASK] where a token is missing, e.g. "the [MASK] sat on the mat"')


def run(args) -> int:
    from explorer.decoding.fill import fill_mask

    workspace = workspace_from_args(args)
    result = fill_mask(workspace, args.text, top_k=args.top_k)
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    for number, mask in enumerate(result.masks):
        if number:
            print()
        print(f"{result.mask_token} at token {mask.position}:")
        for prediction in mask.predictions:
            print(f"  {prediction.prob:7.4f}  {prediction.token:<12}  {prediction.sequence}")
    return 0
