"""Positional encodings: the sinusoidal matrix (positions x dimensions), its sinusoids, the
position-similarity matrix, what a loaded model learned, and the relative-position property
PE(n+k) = PE(n) M_k fitted by least squares with its residual.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
)

from explorer.analysis import positional as pe
from explorer.export.positional import (
    DEFAULT_CURVE_DIMS,
    DEFAULT_DIMS,
    DEFAULT_SHIFT,
    MAX_FIT_DIMS,
    MAX_POSITIONS,
    PositionalView,
    opened_positions,
    parse_dims,
    positional_tables,
    reference_positions,
    residuals_by_shift,
    shift_fit,
)
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.heatmap import HeatmapWidget, label_font
from explorer.ui.panels.base import Panel
from explorer.ui.panels.relative_bias import RelativeBiasView
from explorer.ui.plot_style import ViewPages, add_legend, readable_axes, theme_grey

KIND_NAMES = {"learned": "learned table", "rope": "RoPE angles", "sinusoidal": "sinusoidal"}
CURVE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")


def _line_plot(title: str, x_label: str, y_label: str) -> pg.PlotWidget:
    widget = pg.PlotWidget(title=title, axisItems=readable_axes("left", "bottom"))
    plot = widget.getPlotItem()
    plot.setLabel("bottom", x_label)
    plot.setLabel("left", y_label)
    plot.showGrid(x=True, y=True, alpha=0.25)
    for side in ("left", "bottom"):
        plot.getAxis(side).setTickFont(label_font())
    add_legend(plot, below=True)  # the curves fill the whole plot
    return widget


class PositionalPanel(Panel):
    PANEL_ID = "positional"
    TITLE = "Positional encodings"
    TOOLTIP = (
        "Sinusoidal positional encodings and what the loaded model uses: the matrix, its "
        "sinusoids, the similarity of positions, the linear map M_k with PE(n+k) ≈ PE(n)·M_k, "
        "and T5's relative-position bias per head."
    )

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.model_positions: pe.ModelPositions | None = None
        self.model_note = ""  # one line on the loaded model's positions (what it has, or why none)
        self.residuals: dict[str, tuple[list[int], np.ndarray]] = {}
        self._residual_cache: dict[tuple, tuple[list[int], np.ndarray]] = {}  # per table, not per redraw

        self.positions_box = QSpinBox()
        self.positions_box.setRange(8, MAX_POSITIONS)
        self.positions_box.setValue(reference_positions(0, DEFAULT_DIMS))
        self.dims_box = QSpinBox()
        self.dims_box.setRange(2, 1024)
        self.dims_box.setSingleStep(2)
        self.dims_box.setValue(DEFAULT_DIMS)
        self.base_box = QSpinBox()
        self.base_box.setRange(2, 1_000_000)
        self.base_box.setValue(int(pe.DEFAULT_BASE))
        self.curve_dims = QLineEdit(DEFAULT_CURVE_DIMS)
        self.curve_dims.setToolTip("dimensions to draw as curves, comma separated")
        self.similarity_kind = QComboBox()
        self.similarity_kind.addItems(["cosine", "dot"])
        self.table_choice = QComboBox()
        self.table_choice.addItem("sinusoidal", "sinusoidal")
        self.shift_box = QSpinBox()
        self.shift_box.setRange(1, MAX_POSITIONS - 1)
        self.shift_box.setValue(DEFAULT_SHIFT)
        self.status = QLabel()
        self.status.setWordWrap(True)

        controls = QHBoxLayout()
        for text, widget in (
            ("positions", self.positions_box), ("d", self.dims_box), ("base L", self.base_box),
            ("dims", self.curve_dims), ("similarity", self.similarity_kind),
            ("of", self.table_choice), ("shift k", self.shift_box),
        ):
            controls.addWidget(QLabel(text))
            controls.addWidget(widget)
        self.curve_dims.setMinimumWidth(QFontMetrics(self.curve_dims.font()).horizontalAdvance(
            "0, 2, 8, 20, 32") + 12)

        self.matrix_map = HeatmapWidget(
            "CET-D1", levels=(-1.0, 1.0), row_title="position n", col_title="dimension i",
            title="sinusoidal PE", value_name="PE",
        )
        self.model_map = HeatmapWidget(
            "CET-D1", levels=None, symmetric=True, row_title="position n", col_title="dimension i",
            title="the loaded model", value_name="value",
        )
        self.similarity_map = HeatmapWidget(
            "viridis", levels=None, row_title="position n", col_title="position m",
            title="similarity", value_name="similarity",
        )
        self.shift_map = HeatmapWidget(
            "CET-D1", levels=None, symmetric=True, row_title="dimension of PE(n)",
            col_title="dimension of PE(n+k)", title="fitted M_k", value_name="M_k",
        )
        self.curves = _line_plot("PE[n, i] against position", "position n", "PE[n, i]")
        self.curve_items: list[pg.PlotDataItem] = []
        self.residual_plot = _line_plot(
            "‖PE(n)·M_k − PE(n+k)‖ / ‖PE(n+k)‖", "shift k", "relative residual"
        )
        self.residual_plot.getPlotItem().setLogMode(y=True)
        self.residual_items = {
            name: self.residual_plot.plot(
                [], [], pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=6,
                symbolBrush=colour, name=name,
            )
            for name, colour in (("sinusoidal", CURVE_COLOURS[0]), ("model", CURVE_COLOURS[1]))
        }
        self.k_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(theme_grey(), style=Qt.DashLine))
        self.residual_plot.addItem(self.k_line, ignoreBounds=True)  # the x range is the shifts'

        # two views a page, large enough to read in a small dock: the model beside the reference
        self.pages = ViewPages()
        # a model without a table and an unfitted M_k say why instead of an empty heatmap
        self.model_view, self.shift_view = EmptyState(self.model_map), EmptyState(self.shift_map)
        self.pages.add_page("PE matrix: sinusoidal and the model", self.matrix_map, self.model_view)
        self.pages.add_page("Sinusoids and similarity", self.curves, self.similarity_map)
        self.pages.add_page("Relative positions: Mₖ", self.shift_view, self.residual_plot)
        self.relative_view = RelativeBiasView()
        self.pages.add_page("Relative-position bias (T5)", self.relative_view)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.pages, stretch=1)
        layout.addWidget(self.status)

        for box in (self.positions_box, self.dims_box, self.base_box, self.shift_box):
            box.valueChanged.connect(self.refresh)
        self.curve_dims.editingFinished.connect(self.refresh)
        self.similarity_kind.currentIndexChanged.connect(self.refresh)
        self.table_choice.currentIndexChanged.connect(self.refresh)
        bus.workspace_changed.connect(self.set_workspace)
        install_export_menu(self)
        self.refresh()

    # -- data -----------------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        """Take d_model and max_len from a Transformer, and read its positional table."""
        model = getattr(workspace, "model", None)
        # another model's table; the sinusoid's fits (a least-squares fit per shift) still hold
        self._residual_cache = {k: v for k, v in self._residual_cache.items() if k[0] != "model"}
        opened = opened_positions(model)
        self.model_positions, self.model_note = opened.found, opened.note
        if opened.sizes is not None:
            self._set_sizes(*opened.sizes)
        self.relative_view.set_model(model)
        self.table_choice.blockSignals(True)
        self.table_choice.clear()
        self.table_choice.addItem("sinusoidal", "sinusoidal")
        if self.model_positions is not None:
            self.table_choice.addItem(f"model ({self.model_positions.kind})", "model")
            self.model_map.setToolTip(self.model_positions.description)
            if opened.compares_model(self.shift_box.value()):
                self.table_choice.setCurrentIndex(1)
        self.table_choice.blockSignals(False)
        self.refresh()

    def _set_sizes(self, dims: int, positions: int) -> None:
        for box, value in ((self.dims_box, dims), (self.positions_box, positions)):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)

    def sinusoidal_table(self) -> np.ndarray:
        return pe.sinusoidal(
            self.positions_box.value(), self.dims_box.value(), self.base_box.value())

    def chosen_table(self) -> np.ndarray:
        if self.table_choice.currentData() == "model" and self.model_positions is not None:
            return self.model_positions.table
        return self.sinusoidal_table()

    # -- drawing --------------------------------------------------------------------------------

    def refresh(self) -> None:
        table = self.sinusoidal_table()
        positions, dims = table.shape
        self.matrix_map.set_matrix(table)
        self.matrix_map.set_title(f"sinusoidal PE ({positions} × {dims})")
        self._draw_curves(table)
        self._draw_model()
        chosen = self.chosen_table()
        kind = self.similarity_kind.currentText()
        self.similarity_matrix = pe.similarity(chosen, kind)
        self.similarity_map.set_matrix(self.similarity_matrix)
        self.similarity_map.set_title(f"{kind} similarity, {self._source_name()}")
        self._draw_relative(table, chosen)

    def _draw_curves(self, table: np.ndarray) -> None:
        dims = parse_dims(self.curve_dims.text(), table.shape[1])
        positions = np.arange(table.shape[0])
        while len(self.curve_items) < len(dims):
            colour = CURVE_COLOURS[len(self.curve_items)]
            self.curve_items.append(self.curves.plot([], [], pen=pg.mkPen(colour, width=2)))
        legend = self.curves.getPlotItem().legend
        legend.clear()
        for index, item in enumerate(self.curve_items):
            if index < len(dims):
                item.setData(positions, table[:, dims[index]])
                legend.addItem(item, f"i = {dims[index]}")
            else:
                item.setData([], [])
        self.curve_dims_shown = dims

    def _draw_model(self) -> None:
        found = self.model_positions
        if found is None:
            self.model_view.show_message(self._no_table_reason())
            return
        self.model_map.set_matrix(found.table)
        self.model_map.set_title(f"the model: {KIND_NAMES[found.kind]}")
        self.model_view.show_view()

    def _no_table_reason(self) -> str:
        if self.workspace is None:
            return "Open a Transformer to see its own positional table beside the sinusoid."
        if self.model_note:  # a Hugging Face model's own reason (T5's bias, rotary, ...)
            return self.model_note[:1].upper() + self.model_note[1:] + "."
        return "No positional table: this model is no Transformer (it reads positions in order)."

    def _draw_relative(self, sinusoid: np.ndarray, chosen: np.ndarray) -> None:
        k = self.shift_box.value()
        lines = [self.model_note + "."] if self.model_note else []
        for name, table in (("sinusoidal", sinusoid), ("model", self._model_table())):
            shifts, residuals = self._shift_residuals(name, table)
            # a residual of exactly 0 has no logarithm: floor it at double precision's epsilon
            self.residual_items[name].setData(shifts, np.maximum(residuals, 1e-17))
            self.residuals[name] = (shifts, residuals)
        self.k_line.setPos(k)
        fitted = self.residuals["sinusoidal"][0] + self.residuals["model"][0] + [k]
        self.residual_plot.setXRange(0, max(fitted) * 1.05 + 1, padding=0)
        if chosen.shape[1] > MAX_FIT_DIMS:
            self.fit = None
            self.shift_view.show_message(f"M_k is not fitted: d = {chosen.shape[1]} (see below).")
            lines.append(
                f"PE(n+k) ≈ PE(n)·M_k is fitted for d ≤ {MAX_FIT_DIMS}: {self._source_name()} has "
                f"d = {chosen.shape[1]}, a least-squares fit per shift that would stall the window.")
        elif (fit := shift_fit(chosen, k)) is not None:
            self.fit = fit
            self.shift_map.set_matrix(self.fit.matrix)
            self.shift_map.set_title(f"fitted M_{k}, {self._source_name()}")
            self.shift_view.show_view()
            lines.append(
                f"PE(n+{k}) ≈ PE(n)·M_{k} fitted on {self.fit.rows_used} positions "
                f"({self._source_name()}): relative residual {self.fit.relative_residual:.2e}"
            )
        else:
            self.fit = None
            self.shift_view.show_message(f"M_{k} is not fitted: too few positions (see below).")
            lines.append(
                f"{self._source_name()} has {chosen.shape[0]} positions: shift {k} leaves too few "
                f"(n, n+{k}) pairs to test a {chosen.shape[1]}-d map (it needs more than d + k)")
        lines.append("≈1e-15: an exact rotation of each (sin, cos) pair; a learned table is not.")
        self.status.setText("  ".join(lines))

    def _shift_residuals(self, name: str, table) -> tuple[list[int], np.ndarray]:
        """Relative residual of M_k for every shift worth fitting, once per table (none past
        MAX_FIT_DIMS)."""
        key = ((name,) if name == "model" else  # set_workspace forgets the model's
               (name, self.positions_box.value(), self.dims_box.value(), self.base_box.value()))
        if key not in self._residual_cache:
            self._residual_cache = {k: v for k, v in self._residual_cache.items() if k[0] != name}
            self._residual_cache[key] = residuals_by_shift(table)
        return self._residual_cache[key]

    def _source_name(self) -> str:
        if self.table_choice.currentData() == "model" and self.model_positions is not None:
            return f"model ({self.model_positions.kind})"
        return "sinusoidal"

    def _model_table(self) -> np.ndarray | None:
        return None if self.model_positions is None else self.model_positions.table

    # -- panel contract -------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.matrix_map.matrix.shape == (self.positions_box.value(), self.dims_box.value())

    def plot_items(self) -> dict[str, object]:
        relative = self.relative_view
        extra = ({"relative_bias": relative.heatmap.ci, "relative_curves": relative.curves.getPlotItem()}
                 if relative.has_content() else {})
        shown = {name: view.view.ci for name, view in (("model", self.model_view),
                                                       ("shift_map", self.shift_view))
                 if not view.empty}  # no figure of an empty heatmap
        return {**extra, **shown,
            "matrix": self.matrix_map.ci,
            "similarity": self.similarity_map.ci,
            "curves": self.curves.getPlotItem(),
            "relative": self.residual_plot.getPlotItem(),
        }

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return positional_tables(PositionalView(
            self.sinusoidal_table(), self.curve_dims_shown, self.similarity_matrix,
            self._model_table(), self.fit, self.residuals, self.relative_view.tables()))
