"""Export any panel's plots as PNG (chosen width and DPI) and SVG, and its numbers as CSV.

Files are named `<panel_id>_<plot>.<ext>`, so "Export all" can put every panel in one folder.
"""

from __future__ import annotations

from pathlib import Path

import importlib

import pyqtgraph as pg
from pyqtgraph.exporters import ImageExporter, SVGExporter
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QWidget,
)

from explorer.durable import replace_file
from explorer.errors import UserError
from explorer.export.tables import safe_name, write_csv

SCREEN_DPI = 96
INCH_PER_METRE = 39.3700787


def _close_paths_explicitly(node) -> None:
    """Rewrite each SVG path's close command "Z" as a line back to its sub-path's start.

    Qt >= 6.9 writes "Z"; pyqtgraph 0.14's SVG exporter parses every path token as "x,y" and fails
    on it (pyqtgraph issue #3495). The drawn shape is the same.
    """
    for path in node.getElementsByTagName("path"):
        tokens = path.getAttribute("d").split()
        if "Z" not in tokens and "z" not in tokens:
            continue
        rewritten, start = [], None
        for token in tokens:
            if token in ("Z", "z"):
                if start is not None:
                    rewritten.append(f"L{start}")
                continue
            if token.startswith("M"):
                start = token[1:]
            rewritten.append(token)
        path.setAttribute("d", " ".join(rewritten))


def _patch_svg_exporter() -> None:
    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    original = module.correctCoordinates
    if getattr(original, "closes_paths", False):
        return

    def correct_coordinates(node, defs, item, options):
        _close_paths_explicitly(node)
        return original(node, defs, item, options)

    correct_coordinates.closes_paths = True
    module.correctCoordinates = correct_coordinates


_patch_svg_exporter()


def _source_width(item) -> float:
    """The width in pixels the item has on screen (what an export at 96 DPI reproduces)."""
    if isinstance(item, pg.GraphicsScene):
        return item.sceneRect().width()
    return item.sceneBoundingRect().width()


def export_png(item, path: Path, width: int | None = None, dpi: int | None = None) -> Path:
    """Render `item` (PlotItem, GraphicsLayout or scene) to PNG.

    Without `width` the image is the on-screen size scaled by dpi/96, so text keeps its physical
    size at a higher DPI; the DPI is also written into the PNG's metadata.
    """
    source_width = _source_width(item)
    if source_width < 1:
        raise UserError(f"cannot export {path.name}: the plot has no size (is the panel shown?)")
    target_width = width or round(source_width * (dpi or SCREEN_DPI) / SCREEN_DPI)
    exporter = ImageExporter(item)
    exporter.parameters()["width"] = int(target_width)  # the height follows the aspect ratio
    image = exporter.export(toBytes=True)
    if dpi:
        dots_per_metre = round(dpi * INCH_PER_METRE)
        image.setDotsPerMeterX(dots_per_metre)
        image.setDotsPerMeterY(dots_per_metre)

    def write(temporary: Path) -> None:
        if not image.save(str(temporary), "PNG"):
            raise UserError(f"cannot write {path}")

    return replace_file(path, write)


def export_svg(item, path: Path) -> Path:
    document = SVGExporter(item).export(toBytes=True)
    return replace_file(path, lambda temporary: temporary.write_bytes(document))


def export_panel(
    panel,
    folder: str | Path,
    formats=("png", "svg", "csv"),
    width: int | None = None,
    dpi: int | None = None,
) -> list[Path]:
    """Write every plot of `panel` as PNG/SVG and every table as CSV into `folder`."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    unknown = set(formats) - {"png", "svg", "csv"}
    if unknown:
        raise UserError(f"unknown export format(s): {', '.join(sorted(unknown))}")
    panel.flush_pending_draws()  # an export shows the newest data, not the last throttled frame
    prefix = safe_name(panel.PANEL_ID)
    written: list[Path] = []
    if "png" in formats or "svg" in formats:
        for name, item in panel.plot_items().items():
            stem = f"{prefix}_{safe_name(name)}"
            if "png" in formats:
                written.append(export_png(item, folder / f"{stem}.png", width, dpi))
            if "svg" in formats:
                written.append(export_svg(item, folder / f"{stem}.svg"))
    if "csv" in formats:
        for name, (header, rows) in panel.tables().items():
            path = folder / f"{prefix}_{safe_name(name)}.csv"
            written.append(write_csv(path, header, rows))
    return written


def export_all(panels, folder: str | Path, formats=("png", "svg", "csv"), width: int | None = None,
               dpi: int | None = None) -> list[Path]:
    """"Export all": every panel that has content, into one folder (`<panel_id>_<plot>.<ext>`)."""
    written: list[Path] = []
    for panel in panels:
        if panel.has_content():
            written += panel.export(folder, formats, width=width, dpi=dpi)
    return written


class ExportDialog(QDialog):
    """Folder, formats, PNG width and DPI: what `export_panel` needs."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.folder = QLineEdit(str(Path.cwd() / "export"))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder)
        folder_row.addWidget(browse)
        self.format_boxes = {fmt: QCheckBox(fmt.upper()) for fmt in ("png", "svg", "csv")}
        formats_row = QHBoxLayout()
        for box in self.format_boxes.values():
            box.setChecked(True)
            formats_row.addWidget(box)
        self.width_box = QSpinBox()
        self.width_box.setRange(0, 10000)
        self.width_box.setSpecialValueText("as shown")
        self.width_box.setSuffix(" px")
        self.dpi_box = QSpinBox()
        self.dpi_box.setRange(72, 1200)
        self.dpi_box.setValue(SCREEN_DPI)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Folder", folder_row)
        form.addRow("Formats", formats_row)
        form.addRow("PNG width", self.width_box)
        form.addRow("PNG DPI", self.dpi_box)
        form.addRow(buttons)

    def _browse(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Export to folder", self.folder.text())
        if chosen:
            self.folder.setText(chosen)

    def options(self) -> dict:
        return dict(
            folder=Path(self.folder.text()),
            formats=tuple(f for f, box in self.format_boxes.items() if box.isChecked()),
            width=self.width_box.value() or None,
            dpi=self.dpi_box.value(),
        )


def run_export_dialog(panel) -> list[Path]:
    """Ask where and how, then export `panel`; errors become a message box."""
    dialog = ExportDialog(f"Export {panel.TITLE or panel.PANEL_ID}", panel)
    if dialog.exec() != QDialog.Accepted:
        return []
    options = dialog.options()
    try:
        return panel.export(options.pop("folder"), **options)
    except (UserError, OSError) as exc:
        QMessageBox.warning(panel, "Export failed", str(exc))
        return []


def install_export_menu(panel) -> None:
    """Right-click "Export…" on the panel's background and in every plot's own context menu."""
    panel.setContextMenuPolicy(Qt.CustomContextMenu)

    def show_menu(pos) -> None:
        menu = QMenu(panel)
        menu.addAction("Export…", lambda: run_export_dialog(panel))
        menu.exec(panel.mapToGlobal(pos))

    panel.customContextMenuRequested.connect(show_menu)
    for item in panel.plot_items().values():
        for view_box in _view_boxes(item):
            if view_box.menu is None:  # the plot's menu is disabled
                continue
            view_box.menu.addSeparator()
            view_box.menu.addAction("Export panel…", lambda: run_export_dialog(panel))


def _view_boxes(item) -> list:
    if isinstance(item, pg.PlotItem):
        return [item.getViewBox()]
    if isinstance(item, pg.GraphicsLayout):
        return [i.getViewBox() for i in item.items if isinstance(i, pg.PlotItem)]
    return []
