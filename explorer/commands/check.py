"""`explorer check --model FILE.py:build [--weights FILE]`: what the explorer sees in your model
(its kind, logits, tokenizer, attention and recurrent modules, whether padding changes its output)
and which panels and commands will work; for each that will not, why and what would fix it
(explorer/usermodel/check.py).

Exit codes: 0 everything the model can show is shown; 1 something it has is not shown (the
lines marked `fix` say how); 2 the model cannot be opened or used (one line).
"""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from explorer.commands.model_args import MODEL_HELP, add_user_model_files

    parser.add_argument("--model", required=True, metavar="FILE.py:build", help=MODEL_HELP)
    add_user_model_files(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    import torch

    from explorer.runtime import choose_threads
    from explorer.usermodel.check import check_model_file

    torch.set_num_threads(choose_threads(None).threads)
    report = check_model_file(args.model, weights=args.weights, tokenizer=args.tokenizer)
    print(json.dumps(report.to_dict()) if args.json else "\n".join(report.lines()))
    return report.exit_code
