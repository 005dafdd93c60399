"""The app's panels rendered without a window, for `explorer export` (papers and slides).

The panels are the app's own: built on an offscreen QApplication around an AppBus, given the
workspace, waited on until they draw, then exported as `<panel>_<plot>.png|svg|csv`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

PANEL_SIZE = (1400, 900)  # the on-screen size the plots are laid out at before export


def _quiet_qt_messages() -> None:
    """The offscreen platform warns about every shown window; pass every other message on."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(_mode, _context, message: str) -> None:
        if "propagateSizeHints" not in message:
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def _settle(app, panel, deadline: float) -> None:
    """Let the panel finish what it computes (until `deadline`)."""
    while time.monotonic() < deadline and panel.busy():
        app.processEvents()
        time.sleep(0.01)
    app.processEvents()


def render_panels(workspace, entries, out: Path, formats: tuple[str, ...], *, width=None, dpi=None,
                  source: str | None = None, target: str = "", timeout_s: float = 120.0,
                  bleu_metrics=None, theme: str = "light", controls: dict | None = None) -> list[Path]:
    """Build the panel of each of `entries` (explorer.ui.panels.PanelEntry), show it `workspace`
    (and `bleu_metrics`, an EvalMetrics, where given), probe and decode `source` where given, wait
    while each panel is `busy()`, and export what it draws. A panel with nothing to draw for this
    model is skipped with a note on stderr. Every panel is drawn in one `theme`, "light" (for
    papers) or "dark". `controls` (name -> value, explorer/ui/lesson_controls.py) are set on every
    panel first (a lesson's `@set`). -> the files written."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from explorer.ui.app import apply_theme
    from explorer.ui.bus import AppBus
    from explorer.ui.gui_thread_gc import collecting_on_gui_thread
    from explorer.ui.jobs import shutdown_runners
    from explorer.ui.panels import panel_class
    from explorer.ui.probing import Prober
    from explorer.ui.plot_style import theme_palette

    app = QApplication.instance() or QApplication([sys.argv[0]])
    _quiet_qt_messages()
    import pyqtgraph as pg

    # this export's collections run from its event loop too (explorer/ui/gui_thread_gc.py):
    # apply_theme walks every widget
    with collecting_on_gui_thread(app):
        # what the calling app (or test) had: restored afterwards, antialiasing included
        system_palette = app.palette()
        system_options = {key: pg.getConfigOption(key) for key in ("background", "foreground", "antialias")}
        app.setPalette(theme_palette(theme))  # before the panels: they take their colours when built
        apply_theme(app)
        bus = AppBus()
        prober = Prober(bus)  # the app's controller owns one; here nothing else needs a controller
        panels = []
        for entry in entries:
            panel = panel_class(entry)(bus)
            panel.resize(*PANEL_SIZE)
            panel.show()
            panels.append(panel)
        bus.set_workspace(workspace)
        if bleu_metrics is not None:
            bus.eval_metrics.emit(bleu_metrics)
        if source is not None:
            prober.set_input(source, target)
            for panel in panels:
                panel.set_source(source)

        written = []
        try:
            for panel in panels:
                deadline = time.monotonic() + timeout_s
                _settle(app, panel, deadline)
                if controls:  # set once the panel has its content (a set box lists what it holds)
                    from explorer.ui.lesson_controls import set_control

                    for name, value in controls.items():
                        set_control(panel, name, value)
                    _settle(app, panel, deadline)
                panel.flush_pending_draws()  # what it holds back (a throttled redraw) counts too
                if not panel.has_content():
                    print(f"explorer export: {panel.PANEL_ID}: nothing to draw for this model, skipped",
                          file=sys.stderr)
                    continue
                written += panel.export(out, formats, width=width, dpi=dpi)
        finally:
            for panel in panels:
                panel.shutdown()
            shutdown_runners(bus)  # the prober's
            app.processEvents()
            app.setPalette(system_palette)  # an app that called us goes on in its own colours
            pg.setConfigOptions(**system_options)
        return written
