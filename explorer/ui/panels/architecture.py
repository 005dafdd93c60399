"""The open model as blocks, from a traced forward pass on the probe input.

Every module call is recorded by forward hooks (explorer/analysis/architecture.py), so the same
code draws every family and Hugging Face models. Each block shows its input → output shapes in the
notes' symbols (B, T, d, H, ...); the edge below it carries its output. A click on a folded group
(`blocks.0–3 × 4`) unfolds it, on an unfolded one folds it back, on a block with parts expands it;
a double click opens the panel that shows that block. "Unroll" draws a recurrent layer as one cell
per time step of the probe.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QGraphicsRectItem,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
)

from explorer.analysis.architecture import (
    Block,
    _parent,
    call_tables,
    layout_blocks,
    symbolic,
    trace_workspace,
)
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.panels.base import Panel

BLOCK_W, BLOCK_H, GAP = 12.0, 1.0, 0.9  # view units: one block, and the edge between two
NO_MODEL = "Open or create a model: its layers, traced on the probe input, are drawn here."
CELL_W = 2.6  # one unrolled time step


def panel_for(block: Block) -> str:
    """The panel that shows what this block computes."""
    kind, name = block.kind.lower(), block.modules[0].lower()
    if block.recurrent:
        return "hidden"
    if any(4 == len(s) for s in block.outputs) or "attn" in kind or "attention" in kind \
            or "alignment" in kind:
        return "attention"
    if "position" in kind or "position" in name or "wpe" in name:
        return "positional"
    if "embedding" in kind:
        return "embeddings"
    return "gradients"


class ArchitecturePanel(Panel):
    PANEL_ID = "architecture"
    TITLE = "Architecture"
    TOOLTIP = ("The open model as blocks with the tensor shapes of the last forward pass on the "
               "probe input. Click a folded block to unfold it (or a block to expand it), double-"
               "click to open the panel that shows it; Unroll draws a recurrent layer per time step.")

    def __init__(self, bus, parent=None) -> None:
        super().__init__(bus, parent)
        self.trace = None
        self.blocks: list[Block] = []
        self.rects: list[tuple[QRectF, Block]] = []
        self.expanded: set[str] = set()
        self.unfolded: set[str] = set()
        self.runner = self.job_runner("trace")
        self.runner.done.connect(lambda _job, trace: self.show_trace(trace))
        self.runner.failed.connect(lambda _job, message: self._say(message))

        self.unroll_box = QCheckBox("Unroll")
        self.unroll_box.setToolTip("Recurrent layers: one cell per time step of the probe (on) or "
                                   "one block with its loop (off)")
        self.unroll_box.toggled.connect(self.redraw)
        self.numbers_box = QCheckBox("Sizes")
        self.numbers_box.setToolTip("Shapes as numbers instead of the symbols B, T, S, d, H, V, F")
        self.numbers_box.toggled.connect(self.redraw)
        fold = QPushButton("Fold all")
        fold.setToolTip("Fold repeated layers and collapse every expanded block")
        fold.clicked.connect(self.fold_all)
        self.status = QLabel("Open or create a model.")
        controls = QHBoxLayout()
        for widget in (self.unroll_box, self.numbers_box, fold):
            controls.addWidget(widget)
        controls.addWidget(self.status, stretch=1)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.plot.getViewBox().invertY(True)
        self.plot_widget.scene().sigMouseClicked.connect(self._on_click)
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        # no empty diagram before a trace: one line why in its place
        self.view = EmptyState(self.plot_widget, NO_MODEL)
        layout.addWidget(self.view, stretch=1)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe_input_changed.connect(lambda _source, _target: self.retrace())
        bus.training_state.connect(self._on_training_state)
        install_export_menu(self)

    # -- data -----------------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        if workspace is None:
            self.trace = None
            self.plot.clear()
            self.status.setText("Open or create a model.")
            self.view.show_message(NO_MODEL)
            return
        self.retrace()

    def _on_training_state(self, _state: str) -> None:
        if not self.bus.state.training.active and self.trace is None:
            self.retrace()  # the model is the trainer's while it trains: trace once it stops

    def retrace(self) -> None:
        from explorer.analysis.probe_input import default_probe_input

        workspace = self.bus.workspace
        if workspace is None or self.bus.state.training.active:
            return
        source, target = self.probe_text if any(self.probe_text) else default_probe_input(workspace)
        self._say("Tracing the model on the probe input…")
        self.runner.submit(trace_workspace, workspace, source, target)

    def _say(self, text: str) -> None:
        """A status line, in the diagram's place too while there is no diagram."""
        self.status.setText(text)
        if self.view.empty:
            self.view.show_message(text)

    def show_trace(self, trace) -> None:
        self.trace = trace
        self.redraw()

    def fold_all(self) -> None:
        self.expanded.clear()
        self.unfolded.clear()
        self.redraw()

    # -- drawing --------------------------------------------------------------------------------

    def shape_text(self, shapes) -> str:
        if self.numbers_box.isChecked():
            return ", ".join(str(tuple(s)) for s in shapes)
        return ", ".join(symbolic(s, self.trace.sizes) for s in shapes)

    def redraw(self) -> None:
        if self.trace is None:
            return
        self.blocks = layout_blocks(self.trace, self.expanded, self.unfolded,
                                    self.unroll_box.isChecked())
        self.view.show_view()
        self.plot.clear()
        self.rects = []
        palette = self.palette()
        text_color = palette.windowText().color()
        fill = QColor(palette.highlight().color())
        fill.setAlpha(60)
        folded_fill = QColor(palette.highlight().color())
        folded_fill.setAlpha(130)
        y, previous = 0.0, None
        for index, block in enumerate(self.blocks):
            in_row = block.step is not None and block.step > 1
            if in_row:  # unrolled time steps side by side
                x, y = (block.step - 1) * (CELL_W + 0.3), y - BLOCK_H - GAP
            else:
                x = 0.0
            width = CELL_W if block.step is not None else BLOCK_W
            rect = QRectF(x, y, width, BLOCK_H)
            item = QGraphicsRectItem(rect)
            item.setPen(QPen(text_color, 0))
            item.setBrush(QBrush(folded_fill if block.foldable and block.count > 1 else fill))
            self.plot.addItem(item)
            label = block.label if block.step is None else f"t={block.step}"
            title = pg.TextItem(label, color=text_color, anchor=(0, 0))
            title.setPos(x + 0.1, y + 0.05)
            self.plot.addItem(title)
            if block.step is None or block.step == 1:
                shapes = pg.TextItem(f"{self.shape_text(block.inputs)} → {self.shape_text(block.outputs)}",
                                     color=text_color, anchor=(0, 0))
                shapes.setPos(x + 0.1, y + 0.5)
                self.plot.addItem(shapes)
            if previous is not None and not in_row:
                arrow_x = 0.5
                self.plot.plot([arrow_x, arrow_x], [y - GAP, y], pen=pg.mkPen(text_color, width=1.5))
                edge = pg.TextItem(self.shape_text(previous.outputs[:1]), color=text_color,
                                   anchor=(0, 0.5))
                edge.setPos(arrow_x + 0.3, y - GAP / 2)
                self.plot.addItem(edge)
            self.rects.append((rect, block))
            if not in_row:
                previous = block
            y += BLOCK_H + GAP
        self.plot.autoRange(padding=0.04)
        folded = sum(1 for b in self.blocks if b.foldable and b.count > 1)
        self.status.setText(f"{len(self.blocks)} blocks, {len(self.trace.calls)} module calls"
                            + (f"; {folded} folded (click to unfold)" if folded else ""))

    # -- clicks ---------------------------------------------------------------------------------

    def block_at(self, scene_pos) -> Block | None:
        point = self.plot.getViewBox().mapSceneToView(scene_pos)
        return next((block for rect, block in self.rects if rect.contains(point)), None)

    def toggle(self, block: Block) -> None:
        """Unfold a folded group, fold an unfolded one, expand or collapse a block with parts."""
        if block.foldable:
            group = block.key if block.count > 1 and len(block.modules) > 1 else _parent(block.key)
            self.unfolded.symmetric_difference_update({group})
        elif block.expandable:
            self.expanded.symmetric_difference_update({block.key})
        elif _parent(block.key) in self.expanded:
            self.expanded.discard(_parent(block.key))
        else:
            return
        self.redraw()

    def _on_click(self, event) -> None:
        if event.button() != Qt.LeftButton:
            return
        block = self.block_at(event.scenePos())
        if block is None:
            return
        if event.double():
            self.open_panel_of(block)
        else:
            self.toggle(block)

    def open_panel_of(self, block: Block) -> None:
        """Ask the window to show the panel that shows this block (its attention, ...)."""
        self.bus.show_panel.emit(panel_for(block))

    # -- the Panel contract ---------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.trace is not None and bool(self.blocks)

    def plot_items(self) -> dict[str, object]:
        return {"diagram": self.plot} if self.has_content() else {}  # no empty figure

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        return {} if self.trace is None else call_tables(self.trace)
