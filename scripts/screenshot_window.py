"""The default window on a real (virtual) screen, saved as a PNG: what a newcomer sees first.

    xvfb-run -a -s "-screen 0 1280x800x24" python scripts/screenshot_window.py OUT.png [--raise beam]

The window opens maximised on the screen with the demo Transformer (or --checkpoint DIR, or, with
--no-model, none), waits until every panel has drawn, raises the docks named by --raise, and saves
`QWidget.grab()`; with --each, one PNG per dock, OUT_<dock>.png, each with its dock raised. With
--examples, the Examples panel's tour (a checkpoint with its data, e.g. one trained from the
Multi30k recipe): OUT_examples_<step>.png of the evaluation's progress, the table sorted by BLEU
and its "By length" plot, the worst tokens, the neighbours of the worst row (the index built over
the training pairs) and What if with that row pinned and an edit compared. Settings go to a
temporary folder, so a saved layout of the user's is neither read nor changed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--raise", dest="raised", default="", help="comma-separated dock ids")
    parser.add_argument("--each", action="store_true", help="one PNG per dock, each raised")
    parser.add_argument("--no-model", action="store_true", help="the window as it opens, empty")
    parser.add_argument("--checkpoint", type=Path, help="open this checkpoint, not the demo")
    parser.add_argument("--examples", action="store_true", help="the Examples panel's tour")
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    from explorer.training.checkpoint import demo_checkpoints
    from explorer.ui.app import apply_theme
    from explorer.ui.main_window import MainWindow

    apply_theme(app)
    folder = tempfile.mkdtemp(prefix="explorer-shot-")
    settings = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("runs/data_dir", str(Path(folder) / "data"))
    window = MainWindow(settings=settings, load_demo=False)
    window.showMaximized()
    # a bare X server (xvfb-run) has no window manager to maximise it: fill the screen by hand
    window.setGeometry(app.primaryScreen().availableGeometry())
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and window.first_paint_time is None:
        app.processEvents()
    window.create_panels()
    if not args.no_model:
        demo = next(path for name, path in demo_checkpoints().items() if "transformer" in name)
        window.controller.open_checkpoint(args.checkpoint or demo)
    if args.examples:  # its own waits: the other panels draw meanwhile
        examples_tour(app, window, args.out, deadline)
        window.close()
        return
    wait_until(app, deadline, lambda: args.no_model or (
        all(p.has_content() for p in window.panels.values()) and not window.controller.jobs.busy))
    shots = ([(args.out.with_name(f"{args.out.stem}_{dock_id}.png"), [dock_id])
              for dock_id in window.docks] if args.each
             else [(args.out, list(filter(None, args.raised.split(","))))])
    screen = app.primaryScreen().availableGeometry()
    for out, raised in shots:
        for dock_id in raised:
            window.docks[dock_id].raise_()
        for _ in range(50):
            app.processEvents()
            time.sleep(0.02)
        window.grab().save(str(out))
        print(f"{out}: window {window.width()} x {window.height()} on a "
              f"{screen.width()} x {screen.height()} screen")
    window.close()


def wait_until(app, deadline: float, done) -> None:
    while time.monotonic() < deadline and not done():
        app.processEvents()
        time.sleep(0.02)


def save(app, window, out: Path, step: str) -> None:
    for _ in range(50):
        app.processEvents()
        time.sleep(0.02)
    path = out.with_name(f"{out.stem}_examples_{step}.png")
    window.grab().save(str(path))
    print(path)


def examples_tour(app, window, out: Path, deadline: float) -> None:
    """The Examples panel as a user goes through it, one PNG per step."""
    from PySide6.QtCore import Qt

    panel = window.panels["examples"]
    window.docks["examples"].raise_()
    wait_until(app, deadline, lambda: panel.model.table is not None or panel.progress.value() > 0)
    if panel.model.table is None:
        save(app, window, out, "evaluating")  # its progress bar
    wait_until(app, deadline, lambda: panel.model.table is not None and not panel.runner.busy)
    print(panel.summary.text())
    panel.view.sortByColumn(panel.model.names.index("bleu"), Qt.AscendingOrder)
    panel.view.selectRow(0)  # the worst BLEU: the probe of every panel
    panel.tabs.setCurrentIndex(0)
    save(app, window, out, "table_by_length")
    panel.tabs.setCurrentWidget(panel.tokens_table)
    save(app, window, out, "worst_tokens")
    panel.tabs.setCurrentWidget(panel.neighbours)
    panel.neighbours.build()
    save(app, window, out, "neighbours_indexing")  # its progress bar
    wait_until(app, deadline, lambda: panel.neighbours.index is not None and not panel.neighbours.busy())
    save(app, window, out, "neighbours")
    whatif = window.panels["whatif"]
    panel.what_if()  # pins the row's source in the What if panel, raised
    wait_until(app, deadline, lambda: whatif.pinned and not whatif.runner.busy)
    words = whatif.edit_box.text().split()
    whatif.edit_box.setText(" ".join(words[:-2] + words[-1:]) if len(words) > 2 else "ein Hund")
    whatif.compare()
    wait_until(app, deadline, lambda: whatif.result is not None and not whatif.runner.busy)
    save(app, window, out, "whatif")


if __name__ == "__main__":
    main()
