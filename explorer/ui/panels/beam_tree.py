"""The beam search tree: every candidate beam search ranked, x = step, y = leaf order.

Kept candidates are drawn strongly, pruned ones grey, finished (<eos>) ones as green squares; the
n-best hypotheses are numbered and the greedy path is drawn as its own orange path (below the tree
where it leaves the beam). Nodes are a few ScatterPlotItems (one per status) and edges a few
PlotDataItems with connect="pairs", so a width-16, length-50 tree stays fast; token labels are a
small pool of TextItems shown for the nodes in view once zoomed in far enough.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced, qthrottled

from explorer.analysis.beam_layout import TreeLayout, edge_segments, layout_tree, pick_labels
from explorer.analysis.beam_text import describe_greedy_token, describe_node
from explorer.decoding.types import BeamResult, length_penalty
from explorer.ui.decode_worker import DecodeWorker, run_beam_search
from explorer.ui.panels.base import Panel
from explorer.ui.plot_style import StepAxis, add_legend, theme_backdrop, theme_grey, theme_text
from explorer.ui.panels.decoding_widgets import NodeDetail, dark_on_white, show_text, spin_box

STATUS_STYLE = {  # status -> (colour, symbol, size, edge width)
    "root": ("#000000", "o", 10, 2),
    "kept": ("#1f77b4", "o", 9, 2),
    "finished": ("#2ca02c", "s", 11, 2),
    "pruned": ("#b8b8b8", "o", 6, 1),
}
GREEDY_COLOR = "#ff7f0e"
NBEST_COLOR = "#9467bd"
SELECTED_COLOR = "#d62728"
MAX_LABELS = 400  # token labels drawn at once; zoom in to see the rest
MIN_LABEL_PX = 40  # below this many pixels per step not even a short token fits
PRUNED_ROW = 0.4  # rows a pruned leaf takes: the kept hypotheses get the room for their labels
EXAMPLES_SHOWN = 50
SCORE_TOLERANCE = 1e-4  # batched float32 steps make equal paths differ by ~1e-6 in log p
DETAIL_WIDTH = 360  # pixels the node detail takes when it opens
LEGEND_ENTRIES = (("kept", "kept in the beam"), ("pruned", "pruned"),
                  ("finished", "finished (&lt;eos&gt;)"), ("nbest", "n-best (#1 = best)"),
                  ("greedy", "greedy path"))


class BeamTreePanel(Panel):
    PANEL_ID = "beam"
    TITLE = "Beam search tree"
    TOOLTIP = "Every candidate beam search ranked: x = step, y = hypotheses; click a node for details"

    decoded = Signal()  # a new tree is drawn
    node_selected = Signal(int)  # node id

    def __init__(self, bus, parent: QWidget | None = None) -> None:
        super().__init__(bus, parent)
        self.workspace = None
        self.result: BeamResult | None = None
        self.layout_: TreeLayout | None = None
        self.visible_ids = np.zeros(0, dtype=np.int64)  # node ids in the layout, layout order
        self.selected: int | None = None
        self.error = ""
        self._nbest_ends: list[tuple[int, float, float]] = []  # (rank, x, y) of n-best last nodes
        self._ghosts: list[tuple[int, float]] = []  # greedy positions drawn outside the beam
        self._build_controls()
        self._build_plots()
        self.worker = DecodeWorker(self)
        self.worker.finished.connect(self._on_result)
        self.worker.failed.connect(self._on_failed)
        root = QVBoxLayout(self)
        root.addLayout(self.controls)
        root.addWidget(self.splitter, 1)
        root.addWidget(self.status)
        self.request_decode = qdebounced(self.decode, timeout=250, parent=self)
        self._update_labels_soon = qthrottled(self._update_labels, timeout=50, parent=self)
        self._auto_fit = True  # the view follows Fit until the user pans or zooms
        view = self.plot.getViewBox()
        view.sigRangeChanged.connect(lambda *_: self._update_labels_soon())
        view.sigRangeChangedManually.connect(self._on_range_changed_manually)
        view.sigResized.connect(self._on_view_resized)
        bus.workspace_changed.connect(self.set_workspace)
        if bus.workspace is not None:
            self.set_workspace(bus.workspace)

    # ---- widgets ---------------------------------------------------------------------------

    def _build_controls(self) -> None:
        self.source_box = QLineEdit()
        self.source_box.setPlaceholderText("Source sentence (or prompt); Enter decodes")
        self.source_box.returnPressed.connect(self.decode)
        self.example_box = QComboBox()
        self.example_box.setToolTip("Validation sources of the current workspace")
        self.example_box.activated.connect(self._use_example)
        self.width_box = spin_box(QSpinBox, (1, 16), 4,
                                  "Beam width k: hypotheses kept at every step (1 = greedy)")
        self.alpha_box = spin_box(QDoubleSpinBox, (0.0, 3.0), 0.6, "Length penalty α: hypotheses "
                                  "are ranked by score / ((5+|Y|)/6)^α")
        self.max_len_box = spin_box(QSpinBox, (1, 200), 30, "Maximum output length in tokens")
        self.nbest_box = spin_box(QSpinBox, (1, 16), 3,
                                  "How many of the best finished hypotheses to number")
        self.pruned_box = QCheckBox("Show pruned")
        self.pruned_box.setChecked(True)
        self.pruned_box.setToolTip("Pruned candidates take a row each; hide them for a compact tree")
        self.pruned_box.toggled.connect(lambda _: self._redraw())
        self.details_button = QPushButton("Node details")
        self.details_button.setCheckable(True)
        self.details_button.setToolTip("Show or hide the clicked node's attention and the "
                                       "candidates it was chosen from")
        self.details_button.clicked.connect(self.set_detail_open)
        fit = QPushButton("Fit")
        fit.setToolTip("Show the whole tree (drag to pan, wheel to zoom)")
        fit.clicked.connect(self.fit)
        for box in (self.width_box, self.alpha_box, self.max_len_box, self.nbest_box):
            box.valueChanged.connect(lambda _: self.request_decode())
        self.width_box.valueChanged.connect(self.nbest_box.setMaximum)
        self.nbest_box.setMaximum(self.width_box.value())
        top = QHBoxLayout()
        top.addWidget(QLabel("Source"))
        top.addWidget(self.source_box, 3)
        top.addWidget(self.example_box, 2)
        numbers = QHBoxLayout()
        for label, box in (("Beam width", self.width_box), ("Length penalty α", self.alpha_box),
                           ("Max length", self.max_len_box), ("N-best", self.nbest_box)):
            numbers.addWidget(QLabel(label))
            numbers.addWidget(box)
        numbers.addWidget(self.pruned_box)
        numbers.addWidget(fit)
        numbers.addWidget(self.details_button)
        numbers.addStretch(1)
        self.controls = QVBoxLayout()
        self.controls.addLayout(top)
        self.controls.addLayout(numbers)
        self.status = QLabel("No model yet: train one or open a checkpoint.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)

    def _build_plots(self) -> None:
        self.plot = pg.PlotWidget(axisItems={"bottom": StepAxis("bottom")})  # the theme's colours
        item = self.plot.getPlotItem()
        item.invertY(True)  # the best branch on top
        dark_on_white(item)
        item.setLabel("bottom", "decoding step")
        item.setLabel("left", "hypotheses (leaf order)")
        item.getAxis("left").setTicks([[]])  # rows are an order, not a quantity
        self.edge_items = {s: item.plot([], [], connect="pairs",
                                        pen=pg.mkPen(STATUS_STYLE[s][0], width=STATUS_STYLE[s][3]))
                           for s in ("pruned", "kept", "finished")}
        self.greedy_line = item.plot([], [], pen=pg.mkPen(GREEDY_COLOR, width=7))
        self.greedy_line.setOpacity(0.45)
        self.greedy_line.setZValue(-2)
        self.nbest_line = item.plot([], [], connect="pairs", pen=pg.mkPen(NBEST_COLOR, width=4))
        self.nbest_line.setZValue(-1)
        self.node_items = {}
        for status in ("pruned", "kept", "finished", "root"):
            color, symbol, size, _ = STATUS_STYLE[status]
            if status == "root":  # the root reads in the theme's text colour, as the axes do
                color = theme_text()
            scatter = pg.ScatterPlotItem(symbol=symbol, size=size,
                                         pen=pg.mkPen(theme_backdrop(255), width=0.5),
                                         brush=pg.mkBrush(color), hoverable=True, tip=self._tip,
                                         hoverPen=pg.mkPen(SELECTED_COLOR, width=2))
            scatter.sigClicked.connect(self._on_click)
            item.addItem(scatter)
            self.node_items[status] = scatter
        self.greedy_ghosts = pg.ScatterPlotItem(symbol="o", size=9, brush=pg.mkBrush("w"),
                                                pen=pg.mkPen(GREEDY_COLOR, width=2),
                                                hoverable=True, tip=self._ghost_tip)
        item.addItem(self.greedy_ghosts)
        self.selection_ring = pg.ScatterPlotItem(symbol="o", size=20, brush=None,
                                                 pen=pg.mkPen(SELECTED_COLOR, width=3))
        item.addItem(self.selection_ring)
        self._build_legend(item)
        self.text_pool: list[pg.TextItem] = []
        self._label_font = QFont(self.font())
        self._label_font.setPointSizeF(max(self.font().pointSizeF() - 1.5, 6.5))
        self._marker_font = QFont(self._label_font)
        self._marker_font.setBold(True)
        self._metrics = QFontMetricsF(self._label_font)
        self.line_px = self._metrics.height() + 2  # labels in one column at least this far apart
        self.marker_items: list[pg.TextItem] = []  # n-best numbers and greedy tokens

        self.detail = NodeDetail()
        self.detail.picker.changed.connect(lambda: self._show_detail(self.selected))
        # The tree gets the whole width until a node is clicked; the detail then opens beside it
        # and can be dragged wider or collapsed again.
        self.splitter = QSplitter(Qt.Horizontal)
        self.splitter.addWidget(self.plot)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)
        self.splitter.setCollapsible(0, False)
        self.splitter.splitterMoved.connect(lambda *_: self.details_button.setChecked(
            self.detail_open()))
        self.set_detail_open(False)

    def _build_legend(self, item: pg.PlotItem) -> None:
        """The shared legend style, in one row under the x axis: outside the tree, and exported
        with it."""
        self.legend = add_legend(item, offset=None, text_size="8pt")
        samples = {"nbest": self.nbest_line, "greedy": self.greedy_line, **self.node_items}
        for key, text in LEGEND_ENTRIES:
            self.legend.addItem(samples[key], text)
        self.legend.setColumnCount(len(LEGEND_ENTRIES))
        item.layout.addItem(self.legend, 4, 1)

    def detail_open(self) -> bool:
        return self.splitter.sizes()[1] > 0

    def set_detail_open(self, shown: bool) -> None:
        total = max(sum(self.splitter.sizes()), self.splitter.width())
        width = max(DETAIL_WIDTH, self.detail.minimumSizeHint().width()) if shown else 0
        self.splitter.setSizes([max(total - width, 1), width])
        self.details_button.setChecked(shown)

    # ---- workspace and decoding ------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        self.workspace = workspace
        self.example_box.clear()
        if workspace is None:
            self._clear()
            self.status.setText("No model yet: train one or open a checkpoint.")
            return
        data = getattr(workspace, "data", None)
        sources = [pair[0] for pair in getattr(data, "val", [])[:EXAMPLES_SHOWN]] if data else []
        self.example_box.addItems(sources)
        if sources and not self.source_box.text():
            show_text(self.source_box, sources[0])
        self.request_decode()

    def _use_example(self, index: int) -> None:
        show_text(self.source_box, self.example_box.itemText(index))
        self.decode()

    def set_source(self, text: str) -> None:
        show_text(self.source_box, text)
        self.decode()

    def decode(self) -> int:
        """Decode the source in the worker thread with the current settings; returns the job id."""
        if self.workspace is None:
            return -1
        self.status.setText("Decoding…")
        return self.worker.submit(
            run_beam_search, self.workspace, self.source_box.text(), self.width_box.value(),
            self.alpha_box.value(), self.max_len_box.value(), self.nbest_box.value(),
        )

    def _on_failed(self, _job: int, message: str) -> None:
        self.error = message.splitlines()[0]
        self.status.setText(f"Could not decode: {self.error}")

    def _on_result(self, _job: int, result: BeamResult) -> None:
        self.error = ""
        self.set_result(result)

    def set_result(self, result: BeamResult) -> None:
        self.result = result
        self.selected = None
        nodes = result.nodes
        self._id = np.array([n.id for n in nodes], dtype=np.int64)
        self._parent = np.array([-1 if n.parent is None else n.parent for n in nodes], np.int64)
        self._step = np.array([n.step for n in nodes], dtype=np.int64)
        self._score = np.array([n.score for n in nodes], dtype=np.float64)
        self._status = np.array(["root" if n.parent is None else n.status for n in nodes])
        self._children: dict[int, list[int]] = {}
        self._child_by_token: dict[tuple[int, int], int] = {}  # (parent, token id) -> child
        for n in nodes:
            if n.parent is not None:
                self._children.setdefault(n.parent, []).append(n.id)
                self._child_by_token[(n.parent, n.token_id)] = n.id
        self.nbest_nodes = [self.follow(h.token_ids) for h in result.nbest]
        self.greedy_nodes = self.follow(result.greedy.token_ids) if result.greedy else []
        self._path_ids = np.array([0, *self.greedy_nodes, *(i for p in self.nbest_nodes for i in p)])
        self._redraw()
        self._show_detail(None)
        best = result.nbest[0] if result.nbest else None
        greedy = result.greedy
        text = f"{len(nodes) - 1} candidates ranked, width {result.beam_size}, α {result.alpha:g}."
        if best is not None:
            text += f" Best: “{best.text}” (log p = {best.score:.3f})."
        if greedy is not None:
            text += f" Greedy: “{greedy.text}” (log p = {greedy.score:.3f})."
            if best is not None and best.score > greedy.score + SCORE_TOLERANCE:
                text += " Beam found a more probable output than greedy."
        self.status.setText(text)
        self.decoded.emit()

    def follow(self, token_ids: list[int]) -> list[int]:
        """Node ids along `token_ids` from the root, as far as the tree holds them."""
        path, node = [], 0
        for token in token_ids:
            node = self._child_by_token.get((node, token))
            if node is None:
                break
            path.append(node)
        return path

    # ---- drawing ---------------------------------------------------------------------------

    def _clear(self) -> None:
        self.result = None
        self.layout_ = None
        self.visible_ids = np.zeros(0, dtype=np.int64)
        for scatter in self.node_items.values():
            scatter.setData(x=[], y=[])
        for line in (*self.edge_items.values(), self.greedy_line, self.nbest_line):
            line.setData([], [])
        self.greedy_ghosts.setData(x=[], y=[])
        self.selection_ring.setData(x=[], y=[])
        self._nbest_ends, self._ghosts = [], []
        self._update_labels()

    def _redraw(self) -> None:
        if self.result is None:
            return
        keep = np.ones(len(self._id), bool)
        if not self.pruned_box.isChecked():
            keep = self._status != "pruned"
        index = np.flatnonzero(keep)
        self.visible_ids = self._id[index]
        status = self._status[index]
        self.layout_ = layout_tree(self._id[index], self._parent[index], self._step[index],
                                   self._score[index],
                                   leaf_height=np.where(status == "pruned", PRUNED_ROW, 1.0))
        lay = self.layout_
        for name, scatter in self.node_items.items():
            chosen = np.flatnonzero(status == name)
            scatter.setData(x=lay.x[chosen], y=lay.y[chosen], data=self.visible_ids[chosen])
        for name, line in self.edge_items.items():
            x, y = edge_segments(lay, status == name)
            line.setData(x, y, connect="pairs")
        self._row_of = {int(i): k for k, i in enumerate(self.visible_ids)}
        self._draw_paths()
        self.fit()

    def _xy(self, node_id: int) -> tuple[float, float]:
        k = self._row_of[node_id]
        return float(self.layout_.x[k]), float(self.layout_.y[k])

    def _draw_paths(self) -> None:
        """The n-best and greedy paths; their text markers are placed with the labels."""
        pairs = []
        self._nbest_ends = []  # (rank, x, y) of each n-best hypothesis' last node
        for rank, path in enumerate(self.nbest_nodes, start=1):
            chain = [0, *path]
            for a, b in zip(chain[:-1], chain[1:]):
                pairs += [self._xy(a), self._xy(b)]
            if path:
                self._nbest_ends.append((rank, *self._xy(path[-1])))
        xy = np.array(pairs, dtype=float).reshape(-1, 2)  # (2 * edges, 2)
        self.nbest_line.setData(xy[:, 0], xy[:, 1], connect="pairs")

        greedy = self.result.greedy
        chain = [self._xy(n) for n in [0, *self.greedy_nodes]]
        ghosts = []
        if greedy is not None and len(self.greedy_nodes) < len(greedy.token_ids):
            # The greedy path left the beam: draw the rest on its own row below the tree.
            row = self.layout_.rows + 0.5
            ghosts = [(position, row) for position in range(len(self.greedy_nodes),
                                                             len(greedy.token_ids))]
        line = np.array(chain + ghosts, dtype=float)  # (P, 2)
        self.greedy_line.setData(line[:, 0], line[:, 1])
        self._ghosts = ghosts
        positions = list(range(len(self.greedy_nodes), len(self.greedy_nodes) + len(ghosts)))
        self.greedy_ghosts.setData(x=[g[0] for g in ghosts], y=[g[1] for g in ghosts],
                                   data=positions)

    def _set_markers(self, markers) -> None:
        """Bold texts (n-best numbers, greedy tokens outside the beam) from a reused pool;
        `markers`: (text, x, y, colour, anchor)."""
        plot = self.plot.getPlotItem()
        while len(self.marker_items) < len(markers):
            item = pg.TextItem(fill=pg.mkBrush(theme_backdrop()))  # readable over edges
            item.setFont(self._marker_font)
            item.textItem.document().setDocumentMargin(1)
            plot.addItem(item, ignoreBounds=True)
            self.marker_items.append(item)
        for item, (text, x, y, color, anchor) in zip(self.marker_items, markers):
            item.setText(text)
            item.setColor(color)
            item.setAnchor(anchor)
            item.setPos(x, y)
            item.setVisible(True)
        for item in self.marker_items[len(markers):]:
            item.setVisible(False)

    def fit(self) -> None:
        """Show the whole tree with a margin in pixels, so the labels above the top row, the
        n-best numbers below the bottom one and the last step's labels are all inside."""
        self._auto_fit = True
        view = self.plot.getViewBox()
        if self.layout_ is None or not len(self.layout_.x):
            return
        ghosts = self._ghosts
        bottom = max(float(self.layout_.y.max()), max((y for _, y in ghosts), default=0.0))
        right = max([float(self.layout_.x.max())] + [x for x, _ in ghosts]) + 1.0
        height = max(view.height(), 4 * self.line_px)
        margin = self.line_px + 6  # one label line, above the top row and below the bottom row
        span = max(bottom, 1.0) / max(1 - 2 * margin / height, 0.2)
        pad = margin * span / height
        view.setRange(xRange=(-1.3, right), yRange=(-pad, bottom + pad), padding=0)
        self._update_labels()

    def _on_range_changed_manually(self, *_) -> None:
        self._auto_fit = False

    def _on_view_resized(self) -> None:
        if self._auto_fit:  # keep a fitted tree fitted as the dock or the splitter resizes
            self.fit()

    def _label_text(self, node, room_px: float) -> str | None:
        """"token score" if it fits in `room_px`, else the token alone, else None."""
        token = node.token if len(node.token) <= 12 else node.token[:11] + "…"
        for text in ((token,) if node.parent is None else (f"{token} {node.score:.2f}", token)):
            if self._metrics.horizontalAdvance(text) + 10 <= room_px:
                return text
        return None

    def _place_markers(self, px_per_step: float, px_per_row: float):
        """The n-best numbers just below-right of each hypothesis' last node (finished nodes have
        no children, so the right is free), pushed down where two would overlap; and the greedy
        tokens outside the beam under their ghost nodes when the step is wide enough.
        Returns the markers and, for each n-best number, its (column, bottom pixel)."""
        markers, taken = [], []
        bottom_of: dict[float, float] = {}  # column -> lowest marker bottom so far, in pixels
        for rank, x, y in sorted(self._nbest_ends, key=lambda e: (e[1], e[2])):
            top_px = max(y * px_per_row, bottom_of.get(x, -np.inf))
            bottom_of[x] = top_px + self.line_px
            markers.append((f"#{rank}", x + 6 / px_per_step, top_px / px_per_row, NBEST_COLOR,
                            (0, 0)))
            taken.append((x, top_px + self.line_px))
        greedy = self.result.greedy
        if self._ghosts:
            row = self._ghosts[0][1]
            markers.append(("greedy, outside the beam:", self._ghosts[0][0] - 0.2, row,
                            GREEDY_COLOR, (1, 0.5)))
            widest = max(self._metrics.horizontalAdvance(greedy.tokens[p]) for p, _ in self._ghosts)
            if widest + 8 <= px_per_step:
                markers += [(greedy.tokens[p], p, row, GREEDY_COLOR, (0.5, -0.1))
                            for p, _ in self._ghosts]
        return markers, taken

    def _update_labels(self) -> None:
        """Token and cumulative log-prob above-right of the nodes in view, as many as fit without
        overlap: path nodes first, then kept, then (zoomed in far enough) pruned."""
        shown, texts, markers = np.zeros(0, dtype=np.int64), [], []
        view = self.plot.getViewBox()
        if self.layout_ is not None and len(self.layout_.x) and view.width() > 0:
            (x0, x1), (y0, y1) = view.viewRange()
            px_per_step = view.width() / max(x1 - x0, 1e-9)
            px_per_row = view.height() / max(y1 - y0, 1e-9)
            markers, taken = self._place_markers(px_per_step, px_per_row)
            lay = self.layout_
            in_view = np.flatnonzero((lay.x >= x0) & (lay.x <= x1) & (lay.y >= y0) & (lay.y <= y1))
            ids = self.visible_ids[in_view]
            if PRUNED_ROW * px_per_row < self.line_px:  # pruned rows too close for their labels
                in_view, ids = in_view[self._status[ids] != "pruned"], ids[self._status[ids] != "pruned"]
            if px_per_step >= MIN_LABEL_PX and len(in_view):
                status = self._status[ids]  # node ids index the node list
                on_path = np.isin(ids, self._path_ids)
                priority = np.where(on_path, 0, np.where(status == "pruned", 2, 1))
                # The n-best numbers go first: they take their place as labels would.
                columns = np.r_[[c for c, _ in taken], lay.x[in_view]]
                y_px = np.r_[[b for _, b in taken], lay.y[in_view] * px_per_row]
                picked = pick_labels(columns, y_px, np.r_[np.full(len(taken), -1), priority],
                                     self.line_px)
                candidates = in_view[picked[picked >= len(taken)] - len(taken)][:MAX_LABELS]
                texts = [self._label_text(self.result.nodes[int(self.visible_ids[k])], px_per_step)
                         for k in candidates]
                shown = candidates[[t is not None for t in texts]]
                texts = [t for t in texts if t is not None]
        self._set_markers(markers)
        plot = self.plot.getPlotItem()
        while len(self.text_pool) < len(shown):
            item = pg.TextItem(anchor=(0, 1.0), fill=pg.mkBrush(theme_backdrop()))
            item.setFont(self._label_font)
            item.textItem.document().setDocumentMargin(1)  # the box is the text's own height
            plot.addItem(item, ignoreBounds=True)
            self.text_pool.append(item)
        for item, k, text in zip(self.text_pool, shown, texts):
            pruned = self._status[int(self.visible_ids[k])] == "pruned"
            item.setText(text)
            item.setColor(theme_grey() if pruned else theme_text())
            item.setPos(float(self.layout_.x[k]) + 0.06, float(self.layout_.y[k]))
            item.setVisible(True)
        for item in self.text_pool[len(shown):]:
            item.setVisible(False)
        self.labels_shown = len(shown)

    # ---- hover and click -------------------------------------------------------------------

    def _tip(self, x, y, data) -> str:
        return describe_node(self.result, int(data))

    def _ghost_tip(self, x, y, data) -> str:
        return describe_greedy_token(self.result, int(data))

    def _on_click(self, _scatter, points, _event=None) -> None:
        if len(points):
            self.select_node(int(points[0].data()))

    def select_node(self, node_id: int | None) -> None:
        self.selected = node_id
        self._show_detail(node_id)
        if node_id is not None:
            if not self.detail_open():
                self.set_detail_open(True)
            self.node_selected.emit(node_id)

    def _show_detail(self, node_id: int | None) -> None:
        if self.result is None or node_id is None or node_id not in getattr(self, "_row_of", {}):
            self.selection_ring.setData(x=[], y=[])
            self.detail.clear()
            return
        x, y = self._xy(node_id)
        self.selection_ring.setData(x=[x], y=[y])
        node = self.result.nodes[node_id]
        siblings = [self.result.nodes[c] for c in self._children.get(node.parent, [])]
        self.detail.show_node(describe_node(self.result, node_id, compact=True), node.attention, self.result.source_tokens,
                              siblings, node_id)

    # ---- content and export ----------------------------------------------------------------

    def has_content(self) -> bool:
        return self.result is not None and len(self.result.nodes) > 1

    def plot_items(self) -> dict[str, object]:
        return {"tree": self.plot.getPlotItem(), "node_detail": self.detail.charts.ci}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.result is None:
            return {}
        result = self.result
        on_greedy = set(self.greedy_nodes)
        nbest_rank = {path[-1]: rank for rank, path in enumerate(self.nbest_nodes, 1) if path}
        position = {int(i): k for k, i in enumerate(self.visible_ids)}
        header = ["id", "parent", "step", "token_id", "token", "logprob", "score",
                  "normalized_score", "rank", "status", "nbest", "on_greedy_path", "x", "y"]
        rows = []
        for n in result.nodes:
            k = position.get(n.id)
            normalized = n.score / length_penalty(n.step + 1, result.alpha) if n.parent is not None else 0.0
            rows.append([n.id, "" if n.parent is None else n.parent, n.step, n.token_id, n.token,
                         n.logprob, n.score, normalized, n.rank, n.status,
                         nbest_rank.get(n.id, ""), n.id in on_greedy,
                         "" if k is None else self.layout_.x[k], "" if k is None else self.layout_.y[k]])
        hyp_header = ["name", "text", "score", "normalized_score", "finished", "tokens"]
        hyp_rows = [[f"beam #{i}", h.text, h.score, h.normalized_score, h.finished, " ".join(h.tokens)]
                    for i, h in enumerate(result.nbest, 1)]
        if result.greedy is not None:
            g = result.greedy
            hyp_rows.append(["greedy", g.text, g.score, g.normalized_score, g.finished,
                             " ".join(g.tokens)])
        return {"nodes": (header, rows), "hypotheses": (hyp_header, hyp_rows)}

    def export(self, folder, formats=("png", "svg", "csv"), width=None, dpi=None) -> list[Path]:
        """PNG/SVG/CSV through the shared exporter, plus the whole tree as JSON ("json" or "csv")."""
        from explorer.export.tables import write_json
        from explorer.ui.export import export_panel

        written = export_panel(self, Path(folder), tuple(f for f in formats if f != "json"),
                               width=width, dpi=dpi)
        if self.result is not None and ("json" in formats or "csv" in formats):
            written.append(write_json(Path(folder) / f"{self.PANEL_ID}_tree.json",
                                      self.result.to_dict(include_attention=True)))
        return written

    def closeEvent(self, event) -> None:
        self.worker.stop()
        super().closeEvent(event)
