"""`explorer bleu HYP REF [REF ...]`: corpus BLEU with its n-gram breakdown, sacreBLEU-compatible.

Prints the line sacreBLEU's API prints (`BLEU = 34.12 65.2/40.1/27.3/19.0 (BP = ...)`) and the
signature, or with `--json` the full breakdown. Files are UTF-8, optionally .gz, one sentence per
line; every reference file must have as many lines as the hypothesis file.
"""

from __future__ import annotations

import argparse

SMOOTH_METHODS = ("exp", "floor", "add-k", "none")
TOKENIZERS = ("13a", "intl", "char", "none", "zh")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("hyp_file", metavar="HYP_FILE", help="system output, one sentence per line")
    parser.add_argument("ref_files", metavar="REF_FILE", nargs="+", help="one or more references")
    parser.add_argument("--json", action="store_true", help="print the breakdown as JSON")
    parser.add_argument("--tokenize", "-tok", default="13a", choices=TOKENIZERS,
                        help="BLEU tokenizer (default: %(default)s)")
    parser.add_argument("--lowercase", "-lc", action="store_true", help="case-insensitive BLEU")
    parser.add_argument("--smooth", "-s", default="exp", choices=SMOOTH_METHODS,
                        help="smoothing method (default: %(default)s)")
    parser.add_argument("--smooth-value", type=float, default=None,
                        help="value for floor (default 0.1) and add-k (default 1) smoothing")
    parser.add_argument("--max-order", type=int, default=4, help="largest n-gram (default: 4)")
    parser.add_argument("--width", "-w", type=int, default=2, help="decimals of the score")


def run(args: argparse.Namespace) -> int:
    import json

    from explorer.data.readers import read_lines
    from explorer.errors import UserError
    from explorer.metrics.bleu import corpus_bleu

    if args.max_order < 1:
        raise UserError(f"--max-order must be at least 1, got {args.max_order}")
    hypotheses = read_lines(args.hyp_file)
    references = []
    for path in args.ref_files:
        lines = read_lines(path)
        if len(lines) != len(hypotheses):
            raise UserError(
                f"{path}: has {len(lines)} lines but {args.hyp_file} has {len(hypotheses)}; "
                "every reference needs one line per hypothesis"
            )
        references.append(lines)

    result = corpus_bleu(
        hypotheses,
        references,
        tokenize=args.tokenize,
        lowercase=args.lowercase,
        smooth=args.smooth,
        smooth_value=args.smooth_value,
        max_order=args.max_order,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(result.format(args.width))
        print(f"signature: {result.signature}")
    return 0
