"""The base of every dockable panel: an id (the dock's objectName), a title, and export."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QWidget

from explorer.ui.bus import AppBus

EXPORT_FORMATS = ("png", "svg", "csv")


class Panel(QWidget):
    PANEL_ID = ""  # short name: the dock's objectName, export file prefix, `explorer export --plots`
    TITLE = ""
    TOOLTIP = ""

    def __init__(self, bus: AppBus, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bus = bus
        self.setObjectName(f"{self.PANEL_ID}Panel")
        self.setToolTip(self.TOOLTIP)

    def has_content(self) -> bool:
        """True once the panel draws real data (used by `explorer gui --smoke`)."""
        raise NotImplementedError

    def shutdown(self) -> None:
        """Stop and wait for the panel's own workers. The main window calls it before it closes;
        the default closes the panel, so a panel that cleans up in closeEvent is covered too."""
        self.close()

    def flush_pending_draws(self) -> None:
        """Draw now what the panel holds back to keep its redraw rate low while training; an
        export calls it first. Panels that draw every update at once have nothing to flush."""

    def plot_items(self) -> dict[str, object]:
        """Name -> pyqtgraph item (PlotItem, GraphicsLayout or scene) exported as PNG and SVG."""
        raise NotImplementedError

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        """Name -> (header, rows): the numbers behind the plots, exported as CSV."""
        raise NotImplementedError

    def export(
        self,
        folder: str | Path,
        formats: tuple[str, ...] = EXPORT_FORMATS,
        width: int | None = None,
        dpi: int | None = None,
    ) -> list[Path]:
        from explorer.ui.export import export_panel

        return export_panel(self, Path(folder), formats, width=width, dpi=dpi)
