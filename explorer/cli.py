"""The `explorer` command line.

Each sub-command lives in `explorer/commands/<name>.py` and provides `add_arguments(parser)` and
`run(args) -> int`. Those modules import nothing heavy at module level, so `explorer --help` and
`explorer --version` answer without importing torch or Qt.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys

from explorer import __version__
from explorer.errors import UserError
from explorer.runtime import tune_allocator

# name -> one-line help; the order is the order shown in --help.
COMMANDS = {
    "gui": "open the desktop app (the default when no command is given)",
    "train": "train a model headless and write a checkpoint",
    "replay": "train a recorded run again from its seed, settings and data; compare the losses",
    "score": "teacher-forced log-probability of a target under a checkpoint",
    "decode": "decode with greedy, beam or sampling search; print text or JSON",
    "fill": "a masked language model's top-k tokens for every [MASK] in a text",
    "attribute": "why each output token: attributions over source and prefix, or attention rollout",
    "bleu": "corpus BLEU with its n-gram breakdown (sacreBLEU-compatible)",
    "evaluate": "every example's output, loss, BLEU and chrF; the summary and BLEU by length",
    "export": "render the app's panels headless to PNG, SVG and CSV",
    "check": "what the explorer sees in your own model, and which panels and commands will work",
    "lesson": "open a lesson (or a folder of them) in the app, or run it headless with its checks",
}


# argparse's words for a value its type refused, and ours
_TYPE_WORDS = {"int": "is not a whole number", "float": "is not a number"}


def one_line_error(message: str) -> str:
    """argparse's message without its jargon: "argument --lr: invalid float value: 'abc'" ->
    "--lr: 'abc' is not a number"."""
    message = re.sub(r"^argument ", "", message).replace(" with argument ", " with ")
    return re.sub(r"invalid (int|float) value: ('.*')$",
                  lambda m: f"{m.group(2)} {_TYPE_WORDS[m.group(1)]}", message)


class CommandParser(argparse.ArgumentParser):
    """An error is one line naming the command (`explorer train: --lr: 'abc' is not a number`),
    exit 2, without the usage that `--help` shows; every sub-command's parser is one too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {one_line_error(message)}\n")


def unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """"unrecognized arguments: --bogus-flag 3 (did you mean --batch-size?)": the nearest of the
    command's own flags to the first unknown one, where one is near."""
    flags = [flag for action in parser._actions for flag in action.option_strings]
    unknown = next((e.split("=", 1)[0] for e in extras if e.startswith("-")), None)
    near = difflib.get_close_matches(unknown, flags, n=1) if unknown else []
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"unrecognized arguments: {' '.join(extras)}{hint}"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="explorer",
        description="Sequence Model Explorer: train small sequence models and watch how they work.",
    )
    parser.add_argument("--version", action="version", version=f"explorer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"explorer.commands.{name}")
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command_parser)
        command_parser.set_defaults(_module=module, _parser=command_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv = ["gui", *argv]
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:  # named by the sub-command that did not know them, not by `explorer`
        command_parser = getattr(args, "_parser", parser)
        command_parser.error(unrecognized(command_parser, extras))
    tune_allocator()
    try:
        return int(args._module.run(args) or 0)
    except UserError as exc:
        print(f"explorer {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"explorer {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`explorer decode ... | head`): stop quietly, like a Unix filter.
        # Python flushes stdout again at exit; pointing it at /dev/null keeps that flush silent too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # the shell's status for a process ended by SIGPIPE
