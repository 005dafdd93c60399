"""Token embeddings in 2-D (PCA): click a token for its nearest neighbours by cosine, solve an analogy
a − b + c with its arrows drawn, highlight a set of tokens (digits, months, ...).

A 50k-token vocabulary is downsampled: the scatter holds at most MAX_POINTS of the points around
the view, a fixed random sample (so the picture does not flicker), and all of them once zoomed in.
Token labels are drawn only for the points in view when few enough are (zoom in to read them), else
for the selected, neighbour and highlighted tokens; a label that would overlap one already placed
(in screen space, the marked tokens first) is left out, so the labels never pile up.
Plain data in: `show_data(EmbeddingData)`; `set_workspace` computes it in a background worker.
While it is in sight, the probes carry a copy of the embeddings (`live_matrices`, its live data in
the panel registry; the trainer's probe copies them between steps): the panel projects the newest
one in its background worker, at most every LIVE_EVERY_S seconds and only when the weights
changed, and never reads the model the trainer's thread is changing.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox, QGridLayout, QLabel, QLineEdit, QListWidget, QPushButton, QSizePolicy, QSplitter,
    QVBoxLayout, QWidget,
)

from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.panels.base import Panel
from explorer.ui.panels.inside_widgets import Background
from explorer.ui.plot_style import theme_text

MAX_LABELS = 150  # labels drawn at once: beyond this many points in view, only the marked ones
MAX_POINTS = 8000  # points drawn at once: a 50k vocabulary pans at ~10 fps when every point is drawn
NEIGHBOURS = 10
NO_MODEL = "Open or create a model: its token embeddings are projected here (PCA)."
LIVE_EVERY_S = 1.5  # a PCA of a large vocabulary takes a good part of a second: at most this often
WHICH_TITLES = {"input": "input embedding", "output": "output embedding (unembedding)",
                "source": "source embedding"}


def arrow_angle(dx: float, dy: float) -> float:
    """pg.ArrowItem's angle (degrees; 0 points left, Qt turns clockwise on screen) for a head
    pointing along (dx, dy) in data coordinates with y up."""
    return math.degrees(math.atan2(dy, -dx))


def live_matrices(model, encoded, step: int) -> dict[str, np.ndarray]:
    """The panel's live data: kind -> (V, D) float32 copy of every embedding the model has (a tied
    output the input's array), taken by the probe on the weights it probes."""
    from explorer.analysis.embeddings import embedding_matrices

    return embedding_matrices(model)


def project_if_changed(workspace, which: str, matrix: np.ndarray | None, like):
    """The panel's background job: `embedding_data`, or None when `matrix` is the one `like` was
    projected from (frozen embeddings: nothing to redraw). Compared here, off the GUI thread."""
    from explorer.analysis.embeddings import embedding_data

    if matrix is not None and like is not None and like.which == which and np.array_equal(like.matrix, matrix):
        return None
    return embedding_data(workspace, which, matrix, like)


class EmbeddingsPanel(Panel):
    PANEL_ID = "embeddings"
    TITLE = "Embeddings"
    TOOLTIP = ("Token embeddings projected on their first two principal components. Click a token for "
               "its nearest neighbours; zoom in to read the labels.")

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.data = None
        self.selected: int | None = None
        self.neighbours: list[tuple[int, float]] = []
        self.answers: list[tuple[int, float]] = []
        self.analogy_ids: tuple[int, int, int] | None = None
        self.runner = Background(self, self._show_error)
        self.live: dict[str, np.ndarray] = {}  # the newest training probe's embeddings
        self.live_pending = False  # `live` came after the last projection started
        self.live_started = -math.inf  # time.monotonic() of the last live projection
        self.live_timer = QTimer(self, singleShot=True)
        self.live_timer.timeout.connect(self._project_live)

        self.which_box = QComboBox()
        self.which_box.setToolTip("which embedding matrix to project")
        self.set_box = QComboBox()
        self.set_box.setToolTip("highlight a set of tokens")
        self.search = QLineEdit()
        self.search.setPlaceholderText("token (Enter: select it)")
        self.a_edit, self.b_edit, self.c_edit = QLineEdit(), QLineEdit(), QLineEdit()
        for edit, hint in ((self.a_edit, "a (king)"), (self.b_edit, "b (man)"), (self.c_edit, "c (woman)")):
            edit.setPlaceholderText(hint)
            edit.returnPressed.connect(self.solve_analogy)
        self.solve_button = QPushButton("a − b + c")
        self.solve_button.setToolTip("the tokens closest by cosine to a − b + c (a, b, c excluded)")
        self.status = QLabel()  # with no model the plot's place says why
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.results = QListWidget()
        self.results.setToolTip("nearest neighbours of the clicked token, or the analogy's answers")
        self.results.itemClicked.connect(self._on_result_clicked)

        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setAspectLocked(True)
        self.plot.setLabel("bottom", "PC1")
        self.plot.setLabel("left", "PC2")
        for side in ("left", "bottom"):
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        self.points = pg.ScatterPlotItem(size=5, pen=None, brush=pg.mkBrush(120, 120, 120, 160))
        self.highlight = pg.ScatterPlotItem(size=8, pen=None, brush=pg.mkBrush(255, 140, 0, 220))
        self.marked = pg.ScatterPlotItem(size=11, pen=pg.mkPen("#d62728", width=2), brush=None)
        for item in (self.points, self.highlight, self.marked):
            self.plot.addItem(item)
        self.points.sigClicked.connect(self._on_points_clicked)
        # the theme's text colour: pyqtgraph's default light grey was hard to read on white
        self.labels = [pg.TextItem(anchor=(0, 1), color=theme_text()) for _ in range(MAX_LABELS)]
        for label in self.labels:
            label.hide()
            self.plot.addItem(label, ignoreBounds=True)
        self.arrows: list = []
        self.sample_order = np.zeros(0, dtype=np.int64)  # each token's rank in the fixed sample
        self.label_timer = QTimer(self, singleShot=True, interval=60)  # redraw once panning pauses
        self.label_timer.timeout.connect(self.update_view)
        self.plot.getViewBox().sigRangeChanged.connect(lambda *_: self.label_timer.start())

        controls = QGridLayout()
        controls.addWidget(self.which_box, 0, 0)
        controls.addWidget(self.set_box, 0, 1)
        controls.addWidget(self.search, 0, 2, 1, 2)
        for column, widget in enumerate((self.a_edit, self.b_edit, self.c_edit, self.solve_button)):
            controls.addWidget(widget, 1, column)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.results)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.plot_widget)
        split.addWidget(side)
        split.setSizes([700, 220])
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        self.view = EmptyState(split, NO_MODEL)  # no empty axes before a projection: why, instead
        layout.addWidget(self.view, stretch=1)

        self.which_box.currentIndexChanged.connect(self._load)
        self.set_box.currentIndexChanged.connect(self.draw_marks)
        self.search.returnPressed.connect(self._on_search)
        self.solve_button.clicked.connect(self.solve_analogy)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe.connect(self._on_probe)
        install_export_menu(self)

    # -- data -----------------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        """A new model, or new weights of the same one (re-emitted after training)."""
        from explorer.analysis.embeddings import available_embeddings

        if not self.bus.state.same_model:
            self.selected, self.neighbours, self.answers, self.analogy_ids = None, [], [], None
            self.live, self.live_pending = {}, False
            self.live_timer.stop()
        if workspace is None:
            self.data = None
            self.status.setText("")
            self.view.show_message(NO_MODEL)
            return
        kinds = available_embeddings(workspace.model)
        if not kinds:
            self.data = None
            self.view.show_message("This model has no embedding table to project.")
        keep = self.which_box.currentData()
        self.which_box.blockSignals(True)
        self.which_box.clear()
        for kind in kinds:
            self.which_box.addItem(WHICH_TITLES[kind], kind)
        self.which_box.setCurrentIndex(max(0, self.which_box.findData(keep)))
        self.which_box.blockSignals(False)
        self._load()

    def _load(self) -> None:
        which = self.which_box.currentData()
        if self.workspace is None or which is None:
            return
        self.status.setText("Projecting…")
        if self.data is None:
            self.view.show_message("Projecting the embeddings…")
        # after a training probe, its copy: the model itself may be changing in the trainer's thread
        self._project(which, self.live.get(which))

    def _project(self, which: str, matrix: np.ndarray | None) -> None:
        workspace = self.workspace
        like = self.data if matrix is not None else None  # same vocabulary: keep tokens and sets

        def ready(data) -> None:
            if data is None:  # the weights had not changed: what is drawn stands
                if self.data is not None:
                    self.status.setText(self.summary(self.data))
            elif workspace is self.workspace and data.which == self.which_box.currentData():
                self.show_data(data)

        self.runner.start("data", project_if_changed, ready, workspace, which, matrix, like)

    def _on_probe(self, probe) -> None:
        """A probe with a copy of the embeddings: project the newest copy, at most every
        LIVE_EVERY_S seconds (the timer waits out the rest), latest wins."""
        matrices = probe.live.get(self.PANEL_ID)
        if not matrices or self.workspace is None:
            return
        self.live, self.live_pending = matrices, True
        if not self.live_timer.isActive():
            wait = LIVE_EVERY_S - (time.monotonic() - self.live_started)
            self.live_timer.start(int(1000 * min(max(wait, 0.0), LIVE_EVERY_S)))

    def _project_live(self) -> None:
        if self.held_until_shown(self._project_live):
            return  # the newest copy is projected when the panel comes into sight
        which = self.which_box.currentData()
        matrix = self.live.get(which) if self.live_pending else None
        self.live_pending = False
        if matrix is None or self.workspace is None:
            return
        self.live_started = time.monotonic()
        self._project(which, matrix)

    def show_data(self, data) -> None:
        """Draw an `EmbeddingData` (plain data)."""
        self.view.show_view()
        reshaped = self.data is None or len(self.data.tokens) != len(data.tokens)
        self.data = data
        if reshaped:
            self.selected, self.neighbours, self.answers, self.analogy_ids = None, [], [], None
        keep = self.set_box.currentData()
        self.set_box.blockSignals(True)
        self.set_box.clear()
        self.set_box.addItem("no highlight", None)
        for name, ids in data.sets.items():
            self.set_box.addItem(f"{name} ({len(ids)})", name)
        self.set_box.setCurrentIndex(max(0, self.set_box.findData(keep)))
        self.set_box.blockSignals(False)
        coords = data.projection.coords
        if reshaped:
            self.sample_order = np.random.default_rng(0).permutation(len(coords))
            low, high = coords.min(axis=0).tolist(), coords.max(axis=0).tolist()  # Python floats:
            # pyqtgraph compares them with its float64 limits
            self.plot.getViewBox().setRange(xRange=(low[0], high[0]), yRange=(low[1], high[1]))
        self.update_points()
        self.status.setText(self.summary(data))
        if self.selected is not None:
            self.neighbours = data.neighbours(self.selected, NEIGHBOURS)
        if self.analogy_ids is not None:
            self.answers = data.analogy(*self.analogy_ids, NEIGHBOURS)
        self.draw_marks()

    @staticmethod
    def summary(data) -> str:
        explained = ", ".join(f"{100 * e:.1f}%" for e in data.projection.explained)
        tied = " (tied: the output embedding is the input embedding)" if data.tied else ""
        return f"{len(data.tokens):,} tokens × {data.matrix.shape[1]} dims, PCA explains {explained}{tied}"

    # -- interaction ----------------------------------------------------------------------------

    def select_token(self, index: int) -> None:
        """Mark a token and list its nearest neighbours by cosine similarity."""
        self.selected, self.analogy_ids, self.answers = index, None, []
        self.neighbours = self.data.neighbours(index, NEIGHBOURS)
        self.draw_marks()

    def solve_analogy(self) -> None:
        if self.data is None:
            return
        texts = (self.a_edit.text().strip(), self.b_edit.text().strip(), self.c_edit.text().strip())
        ids = [self.data.token_id(t) for t in texts]
        missing = [t or "(empty)" for t, i in zip(texts, ids) if i is None]
        if missing:
            self.status.setText(f"not in the vocabulary: {', '.join(missing)}")
            return
        self.analogy_ids = tuple(ids)
        self.answers = self.data.analogy(*self.analogy_ids, NEIGHBOURS)
        self.selected, self.neighbours = None, []
        self.draw_marks()

    def _on_points_clicked(self, _item, points, *_args) -> None:
        if len(points):
            self.select_token(int(points[0].data()))

    def _on_search(self) -> None:
        index = self.data.token_id(self.search.text().strip()) if self.data is not None else None
        if index is None:
            self.status.setText(f"not in the vocabulary: {self.search.text()!r}")
            return
        self.select_token(index)

    def _on_result_clicked(self, item) -> None:
        index = item.data(Qt.ItemDataRole.UserRole)
        if index is not None:
            self.select_token(int(index))

    # -- drawing --------------------------------------------------------------------------------

    def draw_marks(self) -> None:
        if self.data is None:
            return
        coords, tokens = self.data.projection.coords, self.data.tokens
        name = self.set_box.currentData()
        self.highlight.setData(pos=coords[self.data.sets[name]] if name else np.zeros((0, 2)))
        marked = self.marked_ids()
        self.marked.setData(pos=coords[marked] if marked else np.zeros((0, 2)))
        self.results.clear()
        if self.selected is not None:
            self.results.addItem(f"nearest to {tokens[self.selected]!r} (cosine):")
            listed = self.neighbours
        elif self.analogy_ids is not None:
            a, b, c = (tokens[i] for i in self.analogy_ids)
            self.results.addItem(f"{a!r} − {b!r} + {c!r} ≈ (cosine):")
            listed = self.answers
        else:
            listed = []
        for index, score in listed:
            self.results.addItem(f"{tokens[index]}   {score:+.3f}")
            self.results.item(self.results.count() - 1).setData(Qt.ItemDataRole.UserRole, index)
        self._draw_arrows()
        self.update_labels()

    def marked_ids(self) -> list[int]:
        if self.selected is not None:
            return [self.selected] + [i for i, _ in self.neighbours]
        if self.analogy_ids is not None:
            return list(self.analogy_ids) + [i for i, _ in self.answers[:1]]
        return []

    def _draw_arrows(self) -> None:
        for item in self.arrows:
            self.plot.removeItem(item)
        self.arrows = []
        if self.analogy_ids is None or not self.answers:
            return
        a, b, c = self.analogy_ids
        coords = self.data.projection.coords
        # b → a, and the same offset from c → the answer: parallel arrows when the analogy holds
        for start, end, colour in ((b, a, "#1f77b4"), (c, self.answers[0][0], "#d62728")):
            (x0, y0), (x1, y1) = coords[start], coords[end]
            line = pg.PlotDataItem([x0, x1], [y0, y1], pen=pg.mkPen(colour, width=2))
            head = pg.ArrowItem(pos=(x1, y1), angle=arrow_angle(x1 - x0, y1 - y0), headLen=14,
                                pen=None, brush=colour)
            for item in (line, head):
                self.plot.addItem(item, ignoreBounds=True)
                self.arrows.append(item)

    def labelled_ids(self) -> list[int]:
        """The tokens whose labels may be drawn, in the order they are placed: the marked tokens,
        the highlighted set, then every other point in view when few enough are in view; at most
        MAX_LABELS."""
        if self.data is None:
            return []
        coords = self.data.projection.coords
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        in_view = np.flatnonzero((coords[:, 0] >= x0) & (coords[:, 0] <= x1) & (coords[:, 1] >= y0) & (coords[:, 1] <= y1))
        name = self.set_box.currentData()
        wanted = self.marked_ids() + (self.data.sets[name].tolist() if name else [])
        if len(in_view) <= MAX_LABELS:
            shown = set(in_view.tolist())
            return list(dict.fromkeys([i for i in wanted if i in shown] + in_view.tolist()))
        return list(dict.fromkeys(wanted))[:MAX_LABELS]

    def update_view(self) -> None:
        self.update_points()
        self.update_labels()

    def update_points(self) -> None:
        """The points around the view (half a view more on every side, so a pan finds them drawn),
        down to MAX_POINTS of the fixed random sample when there are more."""
        if self.data is None:
            return
        coords = self.data.projection.coords
        (x0, x1), (y0, y1) = self.plot.getViewBox().viewRange()
        dx, dy = (x1 - x0) / 2, (y1 - y0) / 2
        near = ((coords[:, 0] >= x0 - dx) & (coords[:, 0] <= x1 + dx)
                & (coords[:, 1] >= y0 - dy) & (coords[:, 1] <= y1 + dy))
        ids = self.sample_order[np.flatnonzero(near[self.sample_order])[:MAX_POINTS]]
        self.points.setData(pos=coords[ids], data=ids)

    def update_labels(self) -> None:
        """Place the labels greedily in `labelled_ids` order (the marked tokens first): a label
        whose screen rectangle would overlap one already placed is left out."""
        ids = self.labelled_ids()
        coords, tokens = (self.data.projection.coords, self.data.tokens) if self.data else (None, None)
        placed: list[QRectF] = []
        slots = iter(self.labels)
        for index in ids:
            label = next(slots)
            label.setText(tokens[index])
            label.setPos(float(coords[index, 0]), float(coords[index, 1]))
            rect = self.label_rect(label)  # None: not laid out yet, nothing to measure against
            if rect is not None and any(rect.intersects(other) for other in placed):
                label.hide()
                continue
            if rect is not None:
                placed.append(rect)
            label.show()
        for label in slots:
            label.hide()

    def label_rect(self, label) -> QRectF | None:
        """The screen (scene) rectangle a label's text covers where it is placed: anchored at its
        bottom left on the point, so it extends right and up (None before the view is laid out)."""
        view = self.plot.getViewBox()
        if view.width() <= 0:
            return None
        point = view.mapViewToScene(label.pos())
        size = label.textItem.boundingRect()
        return QRectF(point.x(), point.y() - size.height(), size.width(), size.height())

    def drawn_label_rects(self) -> list[tuple[str, QRectF]]:
        """(token, screen rectangle) of every label shown."""
        return [(label.textItem.toPlainText(), self.label_rect(label)) for label in self.labels
                if label.isVisible()]

    def _show_error(self, message: str) -> None:
        self.status.setText(message)
        if self.data is None:
            self.view.show_message(message)

    # -- panel contract -------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.data is not None

    def plot_items(self) -> dict[str, object]:
        return {"projection": self.plot} if self.data is not None else {}  # no empty axes

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        from explorer.analysis.embeddings import embedding_tables

        return {} if self.data is None else embedding_tables(self.data, self.neighbours, self.answers)
