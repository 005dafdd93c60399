"""`explorer export --checkpoint DIR --out DIR`: the app's panels rendered headless, for papers.

The panels are the app's own: built on an offscreen QApplication around an AppBus, given the
checkpoint's workspace, waited on until they draw, then exported as `<panel>_<plot>.png|svg|csv`.
"""

from __future__ import annotations

import argparse

DEFAULT_PLOTS = ("attention", "positional", "gradients", "beam", "bleu", "curves")
FORMATS = ("png", "svg", "csv")
PANEL_SIZE = (1400, 900)  # the on-screen size the plots are laid out at before export


def _csv_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, metavar="DIR", help="checkpoint directory")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the files")
    parser.add_argument("--input", metavar="TEXT", default=None,
                        help="probe/decode this source (or LM text), not a validation example")
    parser.add_argument("--target", metavar="TEXT", default="",
                        help="seq2seq: the target the attention and gradients are probed with")
    parser.add_argument("--plots", type=_csv_list, default=",".join(DEFAULT_PLOTS),
                        help="comma-separated panels (default: %(default)s); any of "
                             "attention, positional, gradients, beam, bleu, curves, step, compare")
    parser.add_argument("--format", dest="formats", type=_csv_list, default=",".join(FORMATS),
                        help="comma-separated formats among png, svg, csv (default: %(default)s)")
    parser.add_argument("--width", type=int, default=None,
                        help="PNG width in pixels; text scales with it (default: as laid out)")
    parser.add_argument("--dpi", type=int, default=None,
                        help="PNG resolution: without --width, 192 doubles the pixels (default 96)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for each panel to draw (default: %(default)s)")


def _check(args) -> list[tuple[str, str]]:
    from explorer.errors import UserError
    from explorer.ui.panels import PANELS

    known = dict(PANELS)
    unknown = [p for p in args.plots if p not in known]
    if unknown or not args.plots:
        named = ", ".join(unknown) or "(none)"
        raise UserError(f"unknown plot(s) {named}; choose from {', '.join(known)}")
    bad = [f for f in args.formats if f not in FORMATS]
    if bad or not args.formats:
        named = ", ".join(bad) or "(none)"
        raise UserError(f"unknown format(s) {named}; choose from {', '.join(FORMATS)}")
    if args.width is not None and not 16 <= args.width <= 20000:
        raise UserError(f"--width {args.width} is out of range (16 to 20000 pixels)")
    if args.dpi is not None and not 10 <= args.dpi <= 2400:
        raise UserError(f"--dpi {args.dpi} is out of range (10 to 2400)")
    return [(p, known[p]) for p in args.plots]


def _quiet_qt_messages() -> None:
    """The offscreen platform warns about every shown window; pass every other message on."""
    import sys

    from PySide6.QtCore import qInstallMessageHandler

    def handler(_mode, _context, message: str) -> None:
        if "propagateSizeHints" not in message:
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def _still_working(panel) -> bool:
    """A panel that reports `busy()` is done when it says so (with or without content); any
    other panel is waited on until it has content."""
    if hasattr(panel, "busy"):
        return panel.busy()
    return not panel.has_content()


def run(args: argparse.Namespace) -> int:
    import os
    import sys
    import time
    from pathlib import Path

    specs = _check(args)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from explorer.errors import UserError
    from explorer.training import evaluate, load_checkpoint
    from explorer.ui.bus import AppBus
    from explorer.ui.panels import panel_class

    if not Path(args.checkpoint).is_dir():
        raise UserError(f"{args.checkpoint}: no such checkpoint directory")
    workspace = load_checkpoint(args.checkpoint)
    app = QApplication.instance() or QApplication([sys.argv[0]])
    _quiet_qt_messages()

    bus = AppBus()
    panels = []
    for _panel_id, spec in specs:
        panel = panel_class(spec)(bus)
        panel.resize(*PANEL_SIZE)
        panel.show()
        panels.append(panel)
    bus.set_workspace(workspace)
    if workspace.is_seq2seq and "bleu" in args.plots:
        # what the app's first evaluation shows
        bus.eval_metrics.emit(evaluate(workspace, bleu_examples=32))
    if args.input is not None:
        for panel in panels:
            if hasattr(panel, "set_probe_input"):
                panel.set_probe_input(args.input, args.target)
            elif hasattr(panel, "set_source"):
                panel.set_source(args.input)

    written = []
    try:
        for panel in panels:
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline and _still_working(panel):
                app.processEvents()
                time.sleep(0.01)
            app.processEvents()
            if not panel.has_content():
                print(f"explorer export: {panel.PANEL_ID}: nothing to draw for this model, skipped",
                      file=sys.stderr)
                continue
            written += panel.export(Path(args.out), tuple(args.formats), width=args.width,
                                    dpi=args.dpi)
    finally:
        for panel in panels:
            panel.shutdown()
        app.processEvents()
    if not written:
        raise UserError(f"nothing to export: none of {', '.join(args.plots)} applies to this model")
    for path in written:
        print(path)
    return 0
