"""The contract of every dockable panel: what the window, `explorer export` and the smoke run may
call on it, the required parts and the optional hooks with their defaults.

A panel is registered with one line in explorer/ui/panels/__init__.py (PANELS, with its dock
group). It is built as `Panel(bus)`, listens to the bus and never imports another panel: data
reaches it as plain-data events (workspace, metrics, probe snapshots), and it asks for a new probe
input on the bus (`bus.probe_requested`). It reads the workspace and the probe input from the app
state (`self.workspace`, `self.probe_text`) and keeps no copy of them. Work it starts off the GUI thread goes through a
`JobRunner` made with `self.job_runner(name)`, which `busy()` and `shutdown()` cover.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QPushButton, QWidget

from explorer.analysis.token_pick import pick_token
from explorer.errors import UserError
from explorer.ui.bus import AppBus
from explorer.ui.jobs import JobRunner
from explorer.ui.panels import live_function

EXPORT_FORMATS = ("png", "svg", "csv")
EXPLAIN_PANEL = "attribution"  # the view a picked output token is explained in


def push_button(text: str, tip: str, slot) -> QPushButton:
    """A button with its tooltip, calling `slot` when clicked."""
    button = QPushButton(text)
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


def elide(text: str, limit: int = 60) -> str:
    """Long probe texts shortened for a one-line status."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Panel(QWidget):
    PANEL_ID = ""  # short name: the dock's objectName, export file prefix, `explorer export --plots`
    TITLE = ""
    TOOLTIP = ""

    def __init__(self, bus: AppBus, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bus = bus
        self.runners: list[JobRunner] = []
        self._held_draws: dict = {}  # draw -> its latest args, asked for while out of sight
        self._drawing_held = False
        self.setObjectName(f"{self.PANEL_ID}Panel")
        self.setToolTip(self.TOOLTIP)
        # the data this panel draws live (its registry entry's `live`): every probe computes it
        # into ProbeSnapshot.live[PANEL_ID] while the panel is in sight, and once for a new model
        # while it is not (what it holds is then drawn when it comes into sight, or for an export)
        self._live = live_function(self.PANEL_ID)
        self._live_got = False  # a probe of this model brought the panel its data
        if self._live is not None:
            bus.probe.connect(self._on_live_probe)
            bus.workspace_changed.connect(self._on_live_workspace)
            self._ask_live(True)

    @property
    def workspace(self):
        """The open workspace. It lives in the app state (explorer/state.py), never in a panel:
        `set_workspace`/`on_workspace` hear that it changed."""
        return self.bus.workspace

    @property
    def probe_text(self) -> tuple[str, str]:
        """What is probed, (source, target): the app state's probe input."""
        return self.bus.probe_text

    @property
    def training(self) -> bool:
        """A run is training the model now (it belongs to the training thread meanwhile)."""
        return self.bus.state.training.status == "running"

    def job_runner(self, name: str) -> JobRunner:
        """A latest-wins runner for this panel's background work (explorer/ui/jobs.py)."""
        runner = JobRunner(f"{self.PANEL_ID}.{name}", self)
        self.runners.append(runner)
        return runner

    def ask_top_examples(self, query, hint: str) -> bool:
        """Ask the Examples panel for the examples where `query` (an ActivityQuery: a unit or a
        head) is most active, and raise it; with no query, say `hint` in the status line."""
        if query is None:
            self.status.setText(hint)
            return False
        self.bus.top_examples_requested.emit(query)
        self.bus.show_panel.emit("examples")
        return True

    def explain_token(self, source: str, output_ids: list[int], origin: str) -> str | None:
        """Ask for the last of `output_ids` (decoded from `source`) to be explained in the
        attribution view, through the Prober; the one-line reason when it cannot be."""
        if self.bus.workspace is None:
            return "open or create a model first"
        try:
            pick = pick_token(self.bus.workspace, source, output_ids, origin)
        except UserError as exc:
            return str(exc)
        self.bus.token_pick_requested.emit(pick)
        self.bus.show_panel.emit(EXPLAIN_PANEL)
        return None

    # -- required -------------------------------------------------------------------------------

    def has_content(self) -> bool:
        """True once the panel draws real data (used by `explorer gui --smoke` and export)."""
        raise NotImplementedError

    def plot_items(self) -> dict[str, object]:
        """Name -> pyqtgraph item (PlotItem, GraphicsLayout or scene) exported as PNG and SVG."""
        raise NotImplementedError

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        """Name -> (header, rows): the numbers behind the plots, exported as CSV."""
        raise NotImplementedError

    # -- optional hooks -------------------------------------------------------------------------

    def applies_to(self, workspace) -> bool:
        """Whether this panel can draw anything for `workspace`'s model (default: any model);
        `explorer gui --smoke` waits only for the panels that apply."""
        return True

    def documents(self) -> dict[str, object]:
        """Name -> JSON-ready data written as `<panel_id>_<name>.json` beside the CSVs (formats
        "json" or "csv"), for what a table cannot hold (a whole beam tree). Default: none."""
        return {}

    def busy(self) -> bool:
        """True while work the panel waits on still runs; `explorer export` waits until False
        before it exports. Default: one of the panel's job runners is busy, or the probe every
        probing panel waits for still runs (without it, a slow probe left a panel empty)."""
        return any(runner.busy for runner in self.runners) or self.bus.probing

    def set_source(self, text: str) -> None:
        """Show this source (`explorer export --input`): decoding panels decode it. Default:
        nothing (probing panels get the input from the Prober instead)."""

    def flush_pending_draws(self) -> None:
        """Draw now what the panel holds back to keep its redraw rate low while training; an
        export calls it first. Default: the draws held while the panel was hidden."""
        self.draw_held()

    def in_sight(self) -> bool:
        """False when the window is shown but this panel is not: hidden, or its dock behind
        another's tab (Qt keeps such a dock isVisible() and moves it off screen, so the visible
        region decides). In a window never shown (an export, a test) every panel draws."""
        if not self.window().isVisible():
            return True
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def held_until_shown(self, draw, *args) -> bool:
        """True when the panel is out of sight (its dock behind another's tab, closed): `draw`
        is then kept and called (with the latest `args`) when the panel comes into sight (or is
        flushed for an export), and the caller draws nothing now. A hidden panel's drawing costs the training thread the
        GIL for nothing; it catches up once, however often it was asked meanwhile."""
        if self._drawing_held or self.in_sight():
            self._held_draws.pop(draw, None)
            return False
        self._held_draws[draw] = args
        return True

    def draw_held(self) -> None:
        """Call the draws held while the panel was out of sight, oldest first."""
        held, self._held_draws = self._held_draws, {}
        self._drawing_held = True
        try:
            for draw, args in held.items():
                draw(*args)
        finally:
            self._drawing_held = False

    def sight_changed(self, in_sight: bool) -> None:
        """The panel came into sight or left it: shown or hidden, or its dock's tab raised or
        covered (the main window calls it then, queued: after the docks' geometry is applied).
        Default: draw what was held while it was out of sight, and ask the probes for the
        panel's live data only while it is in sight."""
        self._ask_live(in_sight or not self._live_got)
        if in_sight:
            self.draw_held()

    def _ask_live(self, wanted: bool) -> None:
        if self._live is not None:
            self.bus.state.probe.want_live(self.PANEL_ID, self._live if wanted else None)

    def _on_live_probe(self, snapshot) -> None:
        if self.PANEL_ID in snapshot.live:
            self._live_got = True
            self._ask_live(self.in_sight())

    def _on_live_workspace(self, _workspace) -> None:
        if not self.bus.state.same_model:
            self._live_got = False
            self._ask_live(True)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.sight_changed(True)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.sight_changed(False)

    def shutdown(self) -> None:
        """Stop and join the panel's job runners and close it. The main window calls it before
        it closes; closing the panel otherwise (a test, export) does the same."""
        self.close()

    def closeEvent(self, event) -> None:
        self._ask_live(False)
        for runner in self.runners:
            runner.shutdown()
        super().closeEvent(event)

    def export(
        self,
        folder: str | Path,
        formats: tuple[str, ...] = EXPORT_FORMATS,
        width: int | None = None,
        dpi: int | None = None,
    ) -> list[Path]:
        """PNG/SVG of `plot_items()`, CSV of `tables()`, JSON of `documents()`."""
        from explorer.export.tables import write_json
        from explorer.ui.export import export_panel

        written = export_panel(self, Path(folder), tuple(f for f in formats if f != "json"),
                               width=width, dpi=dpi)
        if "json" in formats or "csv" in formats:
            for name, data in self.documents().items():
                written.append(write_json(Path(folder) / f"{self.PANEL_ID}_{name}.json", data))
        return written
