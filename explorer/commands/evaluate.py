"""`explorer evaluate`: every example's output and scores under a checkpoint or your own model
(`--model FILE.py:build`), the corpus summary and the scores by source length (the Examples
panel's table, headless)."""

from __future__ import annotations

import argparse
import sys

from explorer.commands.model_args import add_model_source, workspace_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_source(parser)
    data = parser.add_mutually_exclusive_group(required=True)
    data.add_argument("--data", metavar="FILE",
                      help="source<TAB>reference lines (seq2seq) or text lines (language models)")
    data.add_argument("--src", metavar="FILE", help="sources, line-aligned with --tgt")
    data.add_argument("--task", metavar="NAME", help="a built-in task's validation examples")
    parser.add_argument("--tgt", metavar="FILE", help="references, line-aligned with --src")
    parser.add_argument("--beam", type=int, default=1, metavar="K",
                        help="beam width for the outputs (default: 1, greedy)")
    parser.add_argument("--out", metavar="FILE.csv|.jsonl", help="write every example's row here")
    parser.add_argument("--by-length", action="store_true",
                        help="print BLEU (or loss) by source-length bucket")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per batch (default: 32)")


def _pairs(args, workspace):
    from explorer.analysis.examples import read_examples
    from explorer.errors import UserError

    if args.task is None:
        if (args.src is None) != (args.tgt is None):
            raise UserError("--src and --tgt go together")
        return read_examples(workspace, data=args.data, src=args.src, tgt=args.tgt)
    if args.tgt is not None:
        raise UserError("--tgt goes with --src")
    from explorer.data.tasks import TASKS, make_task

    splits = make_task(args.task)  # raises for an unknown name
    if (TASKS[args.task].kind == "lm") == workspace.is_seq2seq:
        raise UserError(f"task {args.task} is {TASKS[args.task].kind} data but the model is a "
                        f"{workspace.family} model")
    return splits.val


def run(args) -> int:
    from explorer.analysis.examples import evaluate_examples, length_buckets, summarize
    from explorer.commands.decode import Progress
    from explorer.errors import UserError

    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.out and not args.out.lower().endswith((".csv", ".jsonl", ".json")):
        raise UserError(f"--out {args.out}: give a .csv or .jsonl file")
    workspace = workspace_from_args(args)
    pairs = _pairs(args, workspace)
    progress = Progress(len(pairs))
    try:
        table = evaluate_examples(workspace, pairs, batch_size=args.batch_size, beam=args.beam,
                                  progress=lambda done, _total: progress.update(done))
    except ValueError as exc:  # e.g. a text longer than the model's positions
        raise UserError(str(exc).splitlines()[0]) from exc
    finally:
        progress.close()
    if args.out:
        import os

        existed = os.path.lexists(args.out)
        table.write(args.out)
        print(f"wrote {len(table)} rows to {args.out}" + (
            " (replaced 1 existing file)" if existed else ""), file=sys.stderr)
    print(summarize(table).format())
    if args.by_length:
        metric = "BLEU" if table.seq2seq else "loss/token"
        print(f"{'source length':>14}  {'examples':>8}  {metric:>10}")
        for bucket in length_buckets(table):
            value = bucket.bleu if table.seq2seq else bucket.mean_loss
            print(f"{bucket.label:>14}  {len(bucket.rows):>8}  {value:>10.2f}")
    return 0
