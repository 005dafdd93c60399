"""Attention heatmaps: queries (target tokens) down, keys (source tokens) across, for every layer,
head and kind (encoder self, decoder masked self, cross, or an RNN's alignment), and a model view
of every layer x head as one mosaic image (explorer/ui/model_view.py). The probe input is editable: an edit asks the
controller's Prober (`bus.probe_requested`), which probes it (or, while training, has the trainer
re-probe it on a throttled schedule); either way the snapshots arrive on `bus.probe`, the
Prober's attention maps ahead of the rest on `bus.probe_attention`.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
)

from explorer.analysis.labels import head_label, layer_label
from explorer.events import AttentionSnapshot, ProbeSnapshot
from explorer.export.probe_tables import (
    ATTENTION_KINDS,
    MEAN_OF_HEADS,
    attention_maps,
    attention_matrix,
    attention_tables,
)
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu, run_export_dialog
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.live_text import LiveText
from explorer.ui.model_view import ModelViewWidget
from explorer.ui.panels.base import Panel, elide
from explorer.ui.panels.decoding_widgets import show_text
from seqmodels.scores import SCORES

# The height a heatmap's rows need, which the panel keeps before the dock below takes it: a readable
# row of tokens each (up to MAX_KEPT_ROWS; more rows share that height), and its title, key labels
# and margins.
ROW_PX = 18
HEADER_PX = 100
MAX_KEPT_ROWS = 24


def heatmap_height(rows: int) -> int:
    return HEADER_PX + ROW_PX * min(rows, MAX_KEPT_ROWS)


KIND_TITLES = {
    "encoder": "encoder self-attention",
    "decoder": "decoder masked self-attention",
    "cross": "cross-attention (decoder → encoder)",
}


class AttentionPanel(Panel):
    PANEL_ID = "attention"
    TITLE = "Attention"
    TOOLTIP = (
        "Attention weights on the probe input: rows are queries (target tokens), columns are keys "
        "(source tokens); each row sums to 1. Hover a cell for its exact weight."
    )

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.snapshot: ProbeSnapshot | None = None
        self.maps: dict[tuple[str, int], AttentionSnapshot] = {}

        self.source_edit = QLineEdit()
        self.source_edit.setPlaceholderText("probe source (or the LM's text)")
        self.target_edit = QLineEdit()
        self.target_edit.setPlaceholderText("probe target")
        self.probe_button = QPushButton("Probe")
        self.kind_box = QComboBox()
        self.layer_box = QComboBox()
        self.head_box = QComboBox()
        self.model_view_box = QCheckBox("Model view (all layers × heads)")
        self.top_button = QPushButton("Top examples")
        self.top_button.setToolTip("List the examples of the Examples table where this head is most "
                                   "active: at each query position its largest attention weight on "
                                   "any key but the first (an idle head parks its attention there), "
                                   "the peak over positions")
        self.top_button.clicked.connect(self.request_top_examples)
        # one line, cut at the panel's edge: the rows of the heatmap need the height; set at every
        # probe while the app trains, so a LiveText (a QLabel re-laid out the window's docks)
        self.status = LiveText("Open or create a model with attention.")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

        controls = QGridLayout()
        controls.addWidget(QLabel("Source"), 0, 0)
        controls.addWidget(self.source_edit, 0, 1, 1, 3)
        controls.addWidget(QLabel("Target"), 1, 0)
        controls.addWidget(self.target_edit, 1, 1, 1, 3)
        controls.addWidget(self.probe_button, 0, 4, 2, 1)
        controls.addWidget(self.kind_box, 2, 0, 1, 2)
        controls.addWidget(self.layer_box, 2, 2)
        controls.addWidget(self.head_box, 2, 3)
        controls.addWidget(self.model_view_box, 2, 4)
        controls.addWidget(self.top_button, 2, 5)

        self.heatmap = HeatmapWidget(
            "viridis", levels=(0.0, 1.0), row_title="query (target)", col_title="key (source)",
            value_name="weight",
        )
        self.grid = ModelViewWidget("viridis")
        self.grid_key: tuple = ()  # (snapshot.attention, kind) the mosaic shows: switches redraw nothing
        self.grid.tile_clicked.connect(self.open_large)
        self.grid.plot.getViewBox().menu.addSeparator()
        self.grid.plot.getViewBox().menu.addAction("Export panel…", lambda: run_export_dialog(self))
        self.stack = QStackedWidget()
        self.stack.addWidget(self.heatmap)
        self.stack.addWidget(self.grid)
        # no empty axes before a map: one line why in its place
        self.view = EmptyState(self.stack, "Open or create a model with attention.")

        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addWidget(self.view, stretch=1)

        self.probe_button.clicked.connect(self.request_probe)
        self.source_edit.editingFinished.connect(self._on_input_edited)
        self.target_edit.editingFinished.connect(self._on_input_edited)
        self.kind_box.currentIndexChanged.connect(self._on_kind_changed)
        self.layer_box.currentIndexChanged.connect(self.refresh)
        self.head_box.currentIndexChanged.connect(self.refresh)
        self.model_view_box.toggled.connect(self._on_model_view_toggled)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe_attention.connect(self.show_snapshot)
        bus.probe.connect(self.show_snapshot)
        bus.probe_input_changed.connect(self._on_probe_input)
        bus.probe_failed.connect(self.status.setText)
        bus.probing_changed.connect(self._on_probing)
        install_export_menu(self)

    # -- probe input ----------------------------------------------------------------------------

    def probe_input(self) -> tuple[str, str]:
        """(source, target) being probed."""
        return self.probe_text

    def set_workspace(self, workspace) -> None:
        self.snapshot, self.maps = None, {}
        if workspace is None:
            self.status.setText("Open or create a model with attention.")
            self.view.show_message(self.status.text())
            return
        self.target_edit.setEnabled(workspace.is_seq2seq)
        if not self.bus.state.same_model:  # no map of the model before while this one's comes
            self.status.setText("Probing the model…")
            self.view.show_message(self.status.text())

    def _on_probe_input(self, source: str, target: str) -> None:
        show_text(self.source_edit, source)
        show_text(self.target_edit, target)

    def request_probe(self) -> None:
        """Ask for the typed input to be probed (the Probe button)."""
        self.bus.probe_requested.emit(self.source_edit.text(), self.target_edit.text())

    def busy(self) -> bool:
        return self.bus.probing

    def _on_probing(self, probing: bool) -> None:
        if probing:
            self.status.setText("Probing…")

    def _on_input_edited(self) -> None:
        if (self.source_edit.text(), self.target_edit.text()) != self.probe_text:
            self.request_probe()

    # -- snapshots ------------------------------------------------------------------------------

    def show_snapshot(self, snapshot: ProbeSnapshot) -> None:
        """Show a probe result (between runs or live from training), keeping the selection."""
        if self.snapshot is not None and snapshot.attention is self.snapshot.attention:
            self.snapshot = snapshot  # the rest of a probe whose maps are drawn already
            return
        self.snapshot = snapshot
        self.maps = attention_maps(snapshot)
        if not self.maps:  # and no map of the model before stays on show
            seq2seq = self.workspace is not None and self.workspace.is_seq2seq
            kind = "seq2seq with attention='none'" if seq2seq else "a recurrent language model"
            self.status.setText(f"This model has no attention ({kind}).")
            self._show_map(False)
            return
        kinds = sorted({kind for kind, _ in self.maps}, key=ATTENTION_KINDS.index)
        if [self.kind_box.itemData(i) for i in range(self.kind_box.count())] != kinds:
            self.kind_box.blockSignals(True)
            self.kind_box.clear()
            for kind in kinds:
                self.kind_box.addItem(self._kind_title(kind), kind)
            # a new model opens on its alignment, target over source, when it has one: what the
            # lectures draw first; a later snapshot of the same model keeps the user's choice
            if "cross" in kinds:
                self.kind_box.setCurrentIndex(kinds.index("cross"))
            self.kind_box.blockSignals(False)
        self._fill_layer_and_head_boxes()  # another model may have other layers and heads
        where = f"step {snapshot.step}: {elide(snapshot.source)!r}"
        translates = self.workspace is None or self.workspace.is_seq2seq  # an LM reads no target
        self.status.setText(where + (f" → {elide(snapshot.target)!r}" if snapshot.target and translates
                                     else ""))
        self.status.setToolTip(self.status.text())
        self.refresh()

    def _kind_title(self, kind: str) -> str:
        config = self.workspace.model.config if self.workspace is not None else None
        score = SCORES.get(getattr(config, "attention", None))  # an RNN encoder-decoder's score
        if kind == "cross" and score is not None:
            return f"RNN alignment, {score.label}"
        return KIND_TITLES[kind]

    def _on_kind_changed(self) -> None:
        self._fill_layer_and_head_boxes()
        self.refresh()

    def _fill_layer_and_head_boxes(self) -> None:
        kind = self.kind_box.currentData()
        layers = sorted(layer for k, layer in self.maps if k == kind)
        heads = self.maps[(kind, layers[0])].weights.shape[0] if layers else 0
        for box, items in (
            (self.layer_box, [(layer_label(layer), layer) for layer in layers]),
            (self.head_box, [("mean of heads", MEAN_OF_HEADS)] * (heads > 1)
             + [(head_label(h), h) for h in range(heads)]),
        ):
            if [box.itemData(i) for i in range(box.count())] == [d for _, d in items]:
                continue
            box.blockSignals(True)
            box.clear()
            for text, data in items:
                box.addItem(text, data)
            box.blockSignals(False)

    def select(self, kind: str, layer: int, head: int) -> None:
        """Show one map: `head` is a head index or MEAN_OF_HEADS."""
        self.kind_box.setCurrentIndex(self.kind_box.findData(kind))
        self.layer_box.setCurrentIndex(self.layer_box.findData(layer))
        self.head_box.setCurrentIndex(self.head_box.findData(head))
        self.refresh()

    def current_map(self) -> AttentionSnapshot | None:
        return self.maps.get((self.kind_box.currentData(), self.layer_box.currentData()))

    def current_matrix(self) -> np.ndarray | None:
        attention = self.current_map()
        if attention is None:
            return None
        return attention_matrix(attention, self.head_box.currentData())

    def _show_map(self, shown: bool) -> None:
        self.view.set_message(None if shown else self.status.text() or "No attention map here.")

    def refresh(self) -> None:
        attention, matrix = self.current_map(), self.current_matrix()
        self._show_map(attention is not None)
        if attention is None:
            return
        self.heatmap.set_matrix(matrix, attention.rows, attention.cols)
        self.heatmap.setMinimumHeight(heatmap_height(len(attention.rows)))
        title = self.kind_box.currentText()
        if attention.weights.shape[0] > 1 or self.layer_box.count() > 1:  # an RNN has one alignment
            title += f", {layer_label(attention.layer)}, {self.head_box.currentText()}"
        self.heatmap.set_title(title)
        if attention.kind == "cross":
            self.heatmap.set_axis_titles("query (target)", "key (source)")
        else:
            self.heatmap.set_axis_titles("query position", "key position")
        if self.model_view_box.isChecked():
            self._update_grid()

    def top_query(self):
        """The head shown as an ActivityQuery (the mean of heads: None)."""
        from explorer.analysis.top_examples import ActivityQuery, attention_points

        attention, head = self.current_map(), self.head_box.currentData()
        if attention is None or head is None or head == MEAN_OF_HEADS:
            return None
        label = f"{self._kind_title(attention.kind)}, {layer_label(attention.layer)}, {head_label(head)}"
        return ActivityQuery(attention_points(attention.kind, attention.layer), head, label)

    def request_top_examples(self) -> None:
        """Ask the Examples panel for the examples where the head shown is most active."""
        self.ask_top_examples(self.top_query(), "Choose one head (not the mean of heads) to find its top examples.")

    # -- model view -----------------------------------------------------------------------------

    def _on_model_view_toggled(self, on: bool) -> None:
        self.stack.setCurrentWidget(self.grid if on else self.heatmap)
        if on:
            self._update_grid()

    def _update_grid(self) -> None:
        kind = self.kind_box.currentData()
        layers = sorted(layer for k, layer in self.maps if k == kind)
        if not layers:
            return
        if self.grid_key and self.grid_key[0] is self.snapshot.attention and self.grid_key[1] == kind:
            return  # a layer or head switch under the model view: the same mosaic
        self.grid.set_maps([self.maps[(kind, layer)] for layer in layers],
                           f"{self.kind_box.currentText()}, every layer × head")
        self.grid_key = (self.snapshot.attention, kind)  # the maps, whichever stage brought them

    def open_large(self, layer: int, head: int) -> None:
        """Leave the model view and show one layer/head large (what a click on a cell does)."""
        self.model_view_box.setChecked(False)
        self.select(self.kind_box.currentData(), layer, head)

    # -- panel contract -------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.current_map() is not None

    def plot_items(self) -> dict[str, object]:
        if self.current_map() is None:  # no figure of empty axes
            return {}
        items = {"heatmap": self.heatmap.ci}
        if self.model_view_box.isChecked() and self.grid.mosaic is not None:
            items["model_view"] = self.grid.ci
        return items

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        self._show_map(self.current_map() is not None)
        return attention_tables(self.maps, self.kind_box.currentData(), self.layer_box.currentData(),
                                self.head_box.currentData())
