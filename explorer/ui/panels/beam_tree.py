"""The beam search tree: every candidate beam search ranked, x = step, y = leaf order.

Kept candidates are drawn strongly, pruned ones grey, finished (<eos>) ones as green squares; the
n-best hypotheses are numbered and the greedy path is drawn as its own orange path (below the tree
where it leaves the beam). Nodes are a few ScatterPlotItems (one per status) and edges a few
PlotDataItems with connect="pairs", so a width-16, length-50 tree stays fast; token labels are a
small pool of TextItems shown for the nodes in view once zoomed in far enough.
"""

from __future__ import annotations

from itertools import takewhile

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import qdebounced, qthrottled

from explorer.analysis.beam_layout import (
    GHOST_CAPTION, TreeLayout, edge_segments, fitted_range, ghost_markers,
    pick_labels, stack_nbest_numbers,
)
from explorer.analysis.beam_tree import PRUNED_ROW, BeamTreeIndex, drawn_tables, visible_layout
from explorer.analysis.beam_text import describe_greedy_token, describe_node, summarize_result
from explorer.decoding.jobs import run_beam_search
from explorer.decoding.types import BeamResult
from explorer.ui.empty_state import EmptyState
from explorer.ui.panels.base import Panel
from explorer.ui.panels.decode_form import DecodeSettingsForm
from explorer.ui.panels.decoding_widgets import NodeDetail, TextPool, dark_on_white, show_text
from explorer.ui.plot_style import StepAxis, add_legend, theme_backdrop, theme_grey, theme_text

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
LABEL_BOX_PX = 2  # a label's box beyond its text (TextPool's document margin, each side)
EXAMPLES_SHOWN = 50
NO_MODEL = "Open or create a model: the beam search tree of the source above is drawn here."
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
        self.result: BeamResult | None = None
        self.layout_: TreeLayout | None = None
        self.visible_ids = np.zeros(0, dtype=np.int64)  # node ids in the layout, layout order
        self.selected: int | None = None
        self.decoded_source = ""  # the source of the tree on show
        self.error = ""
        self._nbest_ends: list[tuple[int, float, float]] = []  # (rank, x, y) of n-best last nodes
        self._ghosts: list[tuple[int, float]] = []  # greedy positions drawn outside the beam
        self._build_controls()
        self._build_plots()
        self.jobs = self.job_runner("decode")
        self.jobs.done.connect(self._on_result)
        self.jobs.failed.connect(self._on_failed)
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
        bus.probe_input_changed.connect(self._follow_probe)

    # ---- widgets ---------------------------------------------------------------------------

    def _build_controls(self) -> None:
        self.source_box = QLineEdit()
        self.source_box.setPlaceholderText("Source sentence (or prompt); Enter decodes")
        self.source_box.returnPressed.connect(self.decode)
        self.example_box = QComboBox()
        self.example_box.setToolTip("Validation sources of the current workspace")
        self.example_box.activated.connect(self._use_example)
        self.form = DecodeSettingsForm(("beam_size", "alpha", "max_len", "nbest"))
        self.form.changed.connect(lambda: self.request_decode())
        self.pruned_box = QCheckBox("Show pruned")
        self.pruned_box.setChecked(True)
        self.pruned_box.setToolTip("Pruned candidates take a row each; hide them for a compact tree")
        self.pruned_box.toggled.connect(lambda _: self._redraw())
        self.details_button = QPushButton("Node details")
        self.details_button.setCheckable(True)
        self.details_button.setToolTip("Show or hide the clicked node's attention and the "
                                       "candidates it was chosen from")
        self.details_button.clicked.connect(self.set_detail_open)
        self.explain_button = QPushButton("Why?")
        self.explain_button.setToolTip("Explain the clicked node's token, with the path to it as the "
                                       "output before it, in the attribution view")
        self.explain_button.setEnabled(False)
        self.explain_button.clicked.connect(self.explain_selected)
        fit = QPushButton("Fit")
        fit.setToolTip("Show the whole tree (drag to pan, wheel to zoom)")
        fit.clicked.connect(self.fit)
        top = QHBoxLayout()
        top.addWidget(QLabel("Source"))
        top.addWidget(self.source_box, 3)
        top.addWidget(self.example_box, 2)
        top.addWidget(self.explain_button)  # here: the row below is as wide as the dock already
        numbers = QHBoxLayout()
        numbers.addWidget(self.form)
        numbers.addWidget(self.pruned_box)
        numbers.addWidget(fit)
        numbers.addWidget(self.details_button)
        numbers.addStretch(1)
        self.controls = QVBoxLayout()
        self.controls.addLayout(top)
        self.controls.addLayout(numbers)
        self.status = QLabel()  # with no model the tree's place says why
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
        # the greedy path dashed over the edges and the n-best paths (a faint band under them was
        # lost where they ran together), below the nodes
        self.greedy_line = item.plot([], [], pen=pg.mkPen(GREEDY_COLOR, width=3.5,
                                                          style=Qt.PenStyle.DashLine))
        self.greedy_line.setZValue(0.5)
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
            scatter.setZValue(1)
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
        label_font = QFont(self.font())
        label_font.setPointSizeF(max(self.font().pointSizeF() - 1.5, 6.5))
        marker_font = QFont(label_font)
        marker_font.setBold(True)
        self._measure_labels(label_font)
        self.labels = TextPool(item, label_font)  # tokens and scores of the nodes in view
        self.markers = TextPool(item, marker_font)  # n-best numbers and greedy tokens

        self.detail = NodeDetail()
        self.detail.picker.changed.connect(lambda: self._show_detail(self.selected))
        # The tree gets the whole width until a node is clicked; the detail then opens beside it
        # and can be dragged wider or collapsed again.
        self.splitter = QSplitter(Qt.Horizontal)
        self.tree_view = EmptyState(self.plot, NO_MODEL)  # no empty axes before the first tree
        self.splitter.addWidget(self.tree_view)
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
        self.example_box.clear()
        if workspace is None:
            self._clear()
            self.status.setText("")
            self.tree_view.show_message(NO_MODEL)
            return
        data = getattr(workspace, "data", None)
        sources = [pair[0] for pair in getattr(data, "val", [])[:EXAMPLES_SHOWN]] if data else []
        self.example_box.addItems(sources)
        if sources and not self.source_box.text():
            show_text(self.source_box, sources[0])
        self.decode()

    def _use_example(self, index: int) -> None:
        show_text(self.source_box, self.example_box.itemText(index))
        self.decode()

    def set_source(self, text: str) -> None:
        show_text(self.source_box, text)
        self.decode()

    def _follow_probe(self, source: str, _target: str) -> None:
        """A new probe (an Examples row, the probe box) is decoded here too."""
        if source and source != self.source_box.text() and self.workspace is not None:
            self.set_source(source)

    def decode(self) -> int:
        """Decode the source in the worker thread with the current settings; returns the job id."""
        if self.workspace is None:
            return -1
        self.status.setText("Decoding…")
        if self.result is None:
            self.tree_view.show_message("Decoding…")
        self.decoded_source = self.source_box.text()  # latest wins: the result shown is this one's
        return self.jobs.submit(run_beam_search, self.workspace, self.source_box.text(),
                                self.form.settings())

    def _on_failed(self, _job: int, message: str) -> None:
        self.error = message
        self.status.setText(f"Could not decode: {self.error}")
        if self.result is None:
            self.tree_view.show_message(f"Could not decode: {self.error}")

    def _on_result(self, _job: int, result: BeamResult) -> None:
        self.error = ""
        self.set_result(result)

    def set_result(self, result: BeamResult) -> None:
        self.result = result
        self.selected = None
        self.explain_button.setEnabled(False)
        self.tree = BeamTreeIndex(result)
        self.tree_view.show_view()
        self._redraw()
        self._show_detail(None)
        self.status.setText(summarize_result(result))
        self.decoded.emit()

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
        index, self.layout_ = visible_layout(self.tree, self.pruned_box.isChecked())
        self.visible_ids, status = self.tree.ids[index], self.tree.status[index]
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
        for rank, path in enumerate(self.tree.nbest_nodes, start=1):
            chain = [0, *path]
            for a, b in zip(chain[:-1], chain[1:]):
                pairs += [self._xy(a), self._xy(b)]
            if path:
                self._nbest_ends.append((rank, *self._xy(path[-1])))
        xy = np.array(pairs, dtype=float).reshape(-1, 2)  # (2 * edges, 2)
        self.nbest_line.setData(xy[:, 0], xy[:, 1], connect="pairs")

        greedy = self.result.greedy
        # its nodes up to the first hidden one (a pruned node, with "Show pruned" off)
        shown = list(takewhile(lambda node: node in self._row_of, self.tree.greedy_nodes))
        chain = [self._xy(n) for n in [0, *shown]]
        ghosts = []
        if greedy is not None and len(shown) < len(greedy.token_ids):
            # The greedy path left the beam (or the tree shown): draw the rest on its own row below.
            row = self.layout_.rows + 0.5
            ghosts = [(position, row) for position in range(len(shown), len(greedy.token_ids))]
        line = np.array(chain + ghosts, dtype=float)  # (P, 2)
        self.greedy_line.setData(line[:, 0], line[:, 1])
        self._ghosts = ghosts
        positions = list(range(len(shown), len(shown) + len(ghosts)))
        self.greedy_ghosts.setData(x=[g[0] for g in ghosts], y=[g[1] for g in ghosts],
                                   data=positions)

    def fit(self) -> None:
        """Show the whole tree with a margin in pixels, so the labels above the top row, the
        n-best numbers below the bottom one and the last step's labels are all inside."""
        self._auto_fit = True
        view = self.plot.getViewBox()
        if self.layout_ is None or not len(self.layout_.x):
            return
        width = self._metrics.horizontalAdvance
        # room right of the last step for "<eos> -12.34  #3", left of the ghosts for their caption
        x_range, y_range = fitted_range(
            self.layout_, self._ghosts, view.height(), self.line_px, view_width=view.width(),
            right_px=width("<eos> -12.34") + width("#10") + 16,
            left_px=width(GHOST_CAPTION) + 8 if self._ghosts else 0.0)
        view.setRange(xRange=x_range, yRange=y_range, padding=0)
        self._update_labels()

    def _measure_labels(self, label_font: QFont) -> None:
        """Measure and space the labels at the size they are drawn: presentation mode gives the
        panel a font `zoom` times larger and draws every label `zoom` times larger
        (explorer/ui/presentation_scale.py), so the label font is measured that much larger."""
        zoom = self.font().pointSizeF() / QApplication.instance().font().pointSizeF()
        drawn = QFont(label_font)
        drawn.setPointSizeF(label_font.pointSizeF() * zoom)
        self._metrics = QFontMetricsF(drawn)
        self.line_px = self._metrics.height() + 2  # labels in one column at least this far apart

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange and hasattr(self, "labels"):
            self._measure_labels(self.labels.font)
            self.fit() if self._auto_fit else self._update_labels()

    def _on_range_changed_manually(self, *_) -> None:
        self._auto_fit = False

    def _on_view_resized(self) -> None:
        if self._auto_fit:  # keep a fitted tree fitted as the dock or the splitter resizes
            self.fit()

    def _label_text(self, node, room_px: float) -> str | None:
        """"token score" if it fits in `room_px` (a step's width) with a gap of one line height
        before the next step's label, else the token alone, else None. The gap is measured at
        the size the labels are drawn (_measure_labels), so ×1 keeps the spacing presentation
        mode has: 10 px at ×1 ran the labels of one row together into a strip."""
        token = node.token if len(node.token) <= 12 else node.token[:11] + "…"
        gap = self._metrics.height()
        for text in ((token,) if node.parent is None else (f"{token} {node.score:.2f}", token)):
            if self._metrics.horizontalAdvance(text) + LABEL_BOX_PX + gap <= room_px:
                return text
        return None

    def _update_labels(self) -> None:
        """Token and cumulative log-prob above-right of the nodes in view, as many as fit without
        overlap: path nodes first, then kept, then (zoomed in far enough) pruned."""
        shown, texts, markers = np.zeros(0, dtype=np.int64), [], []
        view = self.plot.getViewBox()
        if self.layout_ is not None and len(self.layout_.x) and view.width() > 0:
            (x0, x1), (y0, y1) = view.viewRange()
            px_per_step = view.width() / max(x1 - x0, 1e-9)
            px_per_row = view.height() / max(y1 - y0, 1e-9)
            # the n-best numbers, and the greedy tokens outside the beam under their ghosts
            placed, taken = stack_nbest_numbers(self._nbest_ends, px_per_step, px_per_row,
                                                self.line_px)
            markers = [(text, x, y, NBEST_COLOR, (0, 0)) for text, x, y in placed] + [
                (text, x, y, GREEDY_COLOR, anchor) for text, x, y, anchor in ghost_markers(
                    self._ghosts, self.result.greedy.tokens if self._ghosts else [], px_per_step,
                    self._metrics.horizontalAdvance)]
            lay = self.layout_
            in_view = np.flatnonzero((lay.x >= x0) & (lay.x <= x1) & (lay.y >= y0) & (lay.y <= y1))
            ids = self.visible_ids[in_view]
            if PRUNED_ROW * px_per_row < self.line_px:  # pruned rows too close for their labels
                in_view, ids = in_view[self.tree.status[ids] != "pruned"], ids[self.tree.status[ids] != "pruned"]
            # a finished node's green square says <eos> (the legend names it, hover gives the
            # score): a column of "<eos>" labels piled up at the tree's right end
            unfinished = self.tree.status[ids] != "finished"
            in_view, ids = in_view[unfinished], ids[unfinished]
            if px_per_step >= MIN_LABEL_PX and len(in_view):
                status = self.tree.status[ids]  # node ids index the node list
                on_path = np.isin(ids, self.tree.path_ids)
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
        self.markers.show(markers)
        pruned = [self.tree.status[int(self.visible_ids[k])] == "pruned" for k in shown]
        self.labels.show([(text, float(self.layout_.x[k]) + 0.06, float(self.layout_.y[k]),
                           theme_grey() if grey else theme_text(), (0, 1.0))
                          for k, text, grey in zip(shown, texts, pruned)])
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
        self.explain_button.setEnabled(node_id is not None and node_id != 0)  # 0: the root, no token
        self._show_detail(node_id)
        if node_id is not None:
            if not self.detail_open():
                self.set_detail_open(True)
            self.node_selected.emit(node_id)

    def explain_selected(self) -> None:
        """The attribution view explains the selected node's token (through the Prober)."""
        if self.result is None or not self.selected:
            return
        ids = [node.token_id for node in self.result.path(self.selected)]
        message = self.explain_token(self.decoded_source, ids, "the beam tree")
        if message:
            self.status.setText(message)

    def _show_detail(self, node_id: int | None) -> None:
        if self.result is None or node_id is None or node_id not in getattr(self, "_row_of", {}):
            self.selection_ring.setData(x=[], y=[])
            self.detail.clear()
            return
        x, y = self._xy(node_id)
        self.selection_ring.setData(x=[x], y=[y])
        node = self.result.nodes[node_id]
        siblings = [self.result.nodes[c] for c in self.tree.children.get(node.parent, [])]
        self.detail.show_node(describe_node(self.result, node_id, compact=True), node.attention, self.result.source_tokens,
                              siblings, node_id)

    # ---- content and export ----------------------------------------------------------------

    def has_content(self) -> bool:
        return self.result is not None and len(self.result.nodes) > 1

    def plot_items(self) -> dict[str, object]:
        if self.result is None:  # no figure of empty axes
            return {}
        detail = {"node_detail": self.detail.charts.ci} if self.selected is not None else {}
        return {"tree": self.plot.getPlotItem(), **detail}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.result is None:
            return {}
        return drawn_tables(self.result, self.tree, self.visible_ids, self.layout_)

    def documents(self) -> dict[str, object]:
        """The whole tree, attention included, as JSON."""
        return {"tree": self.result.to_dict(include_attention=True)} if self.result else {}
