"""`explorer export --checkpoint DIR --out DIR`: the app's panels rendered headless, for papers.

The rendering is explorer.ui.headless_export's (Qt lives in explorer/ui/ only); this module checks
the arguments and loads the checkpoint.
"""

from __future__ import annotations

import argparse
import os
import sys

from explorer.commands.arguments import utf8_text
from explorer.commands.model_args import add_model_source, workspace_from_args
from explorer.ui.panels import PANELS, export_ids, find_panel  # the registry only: no Qt

DEFAULT_PLOTS = tuple(entry.panel_id for entry in PANELS if entry.exported_by_default)
FORMATS = ("png", "svg", "csv")


def _csv_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_source(parser)
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the files")
    parser.add_argument("--input", "--probe", metavar="TEXT", type=utf8_text, default=None,
                        help="probe/decode this source (or LM text), not a validation example")
    parser.add_argument("--target", "--probe-target", metavar="TEXT", type=utf8_text, default="",
                        help="seq2seq: the target the attention and gradients are probed with")
    parser.add_argument("--plots", type=_csv_list, default=",".join(DEFAULT_PLOTS),
                        help="comma-separated panels (default: %(default)s); any of "
                             + ", ".join(export_ids()))
    parser.add_argument("--format", dest="formats", type=_csv_list, default=",".join(FORMATS),
                        help="comma-separated formats among png, svg, csv (default: %(default)s)")
    parser.add_argument("--width", type=int, default=None,
                        help="PNG width in pixels; text scales with it (default: as laid out)")
    parser.add_argument("--dpi", type=int, default=None,
                        help="PNG resolution: without --width, 192 doubles the pixels (default 96)")
    parser.add_argument("--theme", choices=("light", "dark"), default="light",
                        help="colours of every plot: light (for papers, the default) or dark")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for each panel to draw (default: %(default)s)")


def _check(args) -> list:
    from explorer.errors import UserError

    unknown = [p for p in args.plots if find_panel(p) is None]
    if unknown or not args.plots:
        named = ", ".join(unknown) or "(none)"
        raise UserError(f"unknown plot(s) {named}; choose from {', '.join(export_ids())}")
    bad = [f for f in args.formats if f not in FORMATS]
    if bad or not args.formats:
        named = ", ".join(bad) or "(none)"
        raise UserError(f"unknown format(s) {named}; choose from {', '.join(FORMATS)}")
    if args.width is not None and not 16 <= args.width <= 20000:
        raise UserError(f"--width {args.width} is out of range (16 to 20000 pixels)")
    if args.dpi is not None and not 10 <= args.dpi <= 2400:
        raise UserError(f"--dpi {args.dpi} is out of range (10 to 2400)")
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise UserError(f"--out {args.out}: is a file; give a folder for the files")
    return [find_panel(p) for p in args.plots]


def _greedy_target(workspace, source: str) -> str:
    """The model's own greedy output for `source`: without a target, a seq2seq probe would have
    one query row (<eos>) to show."""
    from explorer.decoding import greedy
    from explorer.decoding.scoring import encode_context

    context = encode_context(workspace, source)
    return greedy(workspace.model, context, max_len=64, tokenizer=workspace.tokenizer).text


def _tables_without_qt(given, specs, out) -> list:
    """The CSVs of panels whose registry entry computes its tables without Qt (given: an
    explorer.export.headless.HeadlessInput): no panel, no QApplication, the same files the
    panel's own export writes. A panel with nothing to draw is skipped with a note, as drawn."""
    from explorer.export.headless import Document
    from explorer.export.tables import safe_name, write_csv, write_json
    from explorer.families import Lazy

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        tables = Lazy(spec.tables)(given)
        if not tables:
            print(f"explorer export: {spec.panel_id}: nothing to draw for this model, skipped",
                  file=sys.stderr)
        documents = {name: table for name, table in tables.items() if isinstance(table, Document)}
        written += [write_csv(out / f"{spec.panel_id}_{safe_name(name)}.csv", *table)
                    for name, table in tables.items() if name not in documents]
        # beside the CSVs, as the panel's export writes its documents() (the json name unsanitised)
        written += [write_json(out / f"{spec.panel_id}_{name}.json", document.data)
                    for name, document in documents.items()]
    return written


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    specs = _check(args)
    from explorer.decoding.limits import check_text
    from explorer.durable import replaced_note
    from explorer.errors import UserError
    from explorer.training import evaluate
    from explorer.training.checkpoint import check_folder

    if args.checkpoint is not None:
        check_folder(Path(args.checkpoint))  # a file named instead of a folder says so
    # with its data: the BLEU panel evaluates; a cut history is warned about, not hidden
    workspace = workspace_from_args(args, load_data=True)
    check_text(workspace.model, args.input, "--input")
    check_text(workspace.model, args.target, "--target")
    # what the app's first evaluation shows in the BLEU panel (a Hugging Face folder has no data)
    evaluates = workspace.is_seq2seq and "bleu" in args.plots and workspace.data is not None
    bleu = evaluate(workspace, bleu_examples=32) if evaluates else None
    target = args.target
    if args.input is not None and not target and workspace.is_seq2seq:
        target = _greedy_target(workspace, args.input)
        print(f"explorer export: no --target: probing with the model's greedy output {target!r}",
              file=sys.stderr)
    before = set(os.listdir(args.out)) if os.path.isdir(args.out) else set()
    if args.formats == ["csv"] and all(spec.tables for spec in specs):
        from explorer.export.headless import HeadlessInput

        given = HeadlessInput(workspace, args.input, target, evaluation=bleu)
        written = _tables_without_qt(given, specs, Path(args.out))
    else:
        from explorer.ui.headless_export import render_panels

        written = render_panels(workspace, specs, Path(args.out), tuple(args.formats),
                                width=args.width, dpi=args.dpi, source=args.input, target=target,
                                timeout_s=args.timeout, bleu_metrics=bleu, theme=args.theme)
    if not written:
        raise UserError(f"nothing to export: none of {', '.join(args.plots)} applies to this model")
    for path in written:
        print(path)
    replaced = replaced_note(written, before)
    if replaced:  # an earlier export's files, say: not replaced silently
        print(f"explorer export: {replaced}", file=sys.stderr)
    return 0
