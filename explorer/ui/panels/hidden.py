"""Inside the layers: hidden states (`hidden`) and gates (`gates`) over the probe text.

Recurrent models: a units x time-steps heatmap per layer and direction, of h_t, c_t (LSTM) or one
gate. Drag across the text to select a span: the units above the threshold on it and below around
it (LSTMVis) are drawn as lines over the text, and the list shows where else in the validation data
they switch on together. On the `brackets` task the list opens on the units that track nesting
depth. Transformers: the residual stream's norm per layer and position, each block's output, and
the logit lens (layers x positions, the top next token and its probability).

Plain data in: `show_snapshot(HiddenSnapshot)`. While training, the trainer's throttled probes
(`bus.probe`) carry one; otherwise the panel computes its own snapshots and state streams in
background workers from the workspace it is given (`set_workspace`).
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox, QGridLayout, QLabel, QLineEdit, QListWidget, QPushButton, QSizePolicy, QSlider,
    QSpinBox, QSplitter, QStackedWidget, QVBoxLayout,
)

from explorer.analysis.labels import layer_label
from explorer.export.probe_tables import hidden_tables
from explorer.ui.bus import AppBus
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.panels.base import Panel, elide
from explorer.ui.panels.decoding_widgets import show_text
from explorer.ui.panels.inside_widgets import Background, LensTable, TracesPlot, UnitHeatmap

RESIDUAL, LENS = "residual", "lens"  # Transformer views besides one block's output
TRACES_HINT = ("Drag across the tokens above: the units on there and off around it are traced "
               "here.")
NO_MODEL = "Open or create a model: its hidden states over the probe text are drawn here."
NO_UNIT_ON = "No unit is on over the span and off around it at this threshold: lower it."
QUANTITY_TITLES = {"h": "hidden state h_t", "c": "cell state c_t", "i": "input gate i", "f": "forget gate f",
                   "g": "candidate g", "o": "output gate o", "r": "reset gate r", "z": "update gate z",
                   "n": "candidate n", "u": "update gate u", "s": "candidate s"}


class HiddenPanel(Panel):
    PANEL_ID = "hidden"
    TITLE = "Hidden states"
    TOOLTIP = ("Hidden states, cell states and gates over the probe text: units down, tokens across. "
               "Drag across tokens to find the units on there and off around it, and where else they fire.")
    SHOWS_GATES = False

    def __init__(self, bus: AppBus, parent=None) -> None:
        super().__init__(bus, parent)
        self.snapshot = None
        self.streams: dict | None = None  # trace name -> StateStream over the validation data
        self.selection = None
        self.matches = None
        self.depth = []  # DepthUnit list on the brackets task
        self.runner = Background(self, self._show_error)

        self.source_edit, self.target_edit = QLineEdit(), QLineEdit()
        self.source_edit.setPlaceholderText("probe text (source, or the LM's text)")
        self.target_edit.setPlaceholderText("target (seq2seq)")
        self.probe_button = QPushButton("Probe")
        self.probe_button.setToolTip("Run the model on this text (Enter)")
        self.layer_box, self.quantity_box = QComboBox(), QComboBox()
        self.layer_box.setToolTip("layer and direction (RNN) or view (Transformer)")
        for box in (self.layer_box, self.quantity_box):
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.quantity_box.setToolTip("what to show for the layer")
        self.threshold = QSlider(Qt.Orientation.Horizontal)
        self.threshold.setRange(-100, 100)
        self.threshold.setValue(30)
        self.threshold.setToolTip("LSTMVis threshold: a unit is 'on' above it")
        self.threshold_label = QLabel()
        self.status = QLabel("Open or create a model.")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.unit_box = QSpinBox()
        self.unit_box.setPrefix("unit ")
        self.unit_box.setToolTip("The unit (row) whose top examples to find; a selection over the "
                                 "tokens picks its first unit")
        self.top_button = QPushButton("Top examples")
        self.top_button.setToolTip("List the examples of the Examples table where this unit is most "
                                   "active: its largest |value| over each example's positions")
        self.top_button.clicked.connect(self.request_top_examples)

        controls = QGridLayout()
        controls.addWidget(self.source_edit, 0, 0, 1, 3)
        controls.addWidget(self.target_edit, 0, 3, 1, 2)
        controls.addWidget(self.probe_button, 0, 5)
        controls.addWidget(self.layer_box, 1, 0)
        controls.addWidget(self.quantity_box, 1, 1)
        controls.addWidget(self.threshold_label, 1, 2)
        controls.addWidget(self.threshold, 1, 3, 1, 3)
        controls.addWidget(self.unit_box, 1, 6)
        controls.addWidget(self.top_button, 1, 7)

        self.heatmap = UnitHeatmap(self.select_span, value_name="h")
        self.lens_table = LensTable()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.heatmap)
        self.stack.addWidget(self.lens_table)
        self.traces = TracesPlot()
        self.traces_view = EmptyState(self.traces, TRACES_HINT)  # no empty plot before a selection
        self.side_list = QListWidget()
        self.side_list.setToolTip("matches of the selection in the validation data, or depth units")
        self.side_list.itemClicked.connect(self._on_side_item)
        self.side_list.hide()  # an empty list read as a blank white box: shown once it lists any
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(self.traces_view)
        lower.addWidget(self.side_list)
        split = QSplitter(Qt.Orientation.Vertical)
        self.views = EmptyState(self.stack, NO_MODEL)  # no empty heatmap before a probe
        split.addWidget(self.views)
        split.addWidget(lower)
        split.setSizes([600, 300])
        layout = QVBoxLayout(self)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addWidget(split, stretch=1)

        self.probe_button.clicked.connect(self.run_probe)
        self.source_edit.returnPressed.connect(self.run_probe)
        self.target_edit.returnPressed.connect(self.run_probe)
        self.layer_box.currentIndexChanged.connect(self._on_layer_changed)
        self.quantity_box.currentIndexChanged.connect(self.refresh)
        self.threshold.valueChanged.connect(self._on_threshold)
        bus.workspace_changed.connect(self.set_workspace)
        bus.probe.connect(self._on_probe)
        bus.probe_input_changed.connect(self._on_probe_input)
        bus.probe_failed.connect(self._show_error)
        self._on_threshold()
        install_export_menu(self)

    # -- input ----------------------------------------------------------------------------------

    def set_workspace(self, workspace) -> None:
        """A new model (or new weights of the same one): the controller's Prober probes it and the
        snapshot arrives on `bus.probe`; the brackets task also gets its depth units."""
        same = workspace is not None and self.bus.state.same_model
        self.streams, self.matches = None, None
        if workspace is None:
            self.snapshot = None
            self.status.setText("Open or create a model.")
            self.views.show_message(NO_MODEL)
            return
        if not same:
            self.snapshot, self.selection, self.depth = None, None, []
            self.target_edit.setEnabled(workspace.is_seq2seq)
            self.traces_view.show_message(TRACES_HINT)
            self.views.show_message("Probing the model on the probe text…")
            self.side_list.clear()
            self.side_list.hide()
        if workspace.task == "brackets" and not workspace.is_seq2seq:
            self.find_depth_units()

    def set_probe_input(self, source: str, target: str = "") -> None:
        """Probe this input, as if typed and Probe pressed."""
        show_text(self.source_edit, source)
        show_text(self.target_edit, target)
        self.run_probe()

    def run_probe(self) -> None:
        """Ask the controller's Prober for the typed input; every probing panel gets the result."""
        self.bus.probe_requested.emit(self.source_edit.text(), self.target_edit.text())

    def _on_probe_input(self, source: str, target: str) -> None:
        show_text(self.source_edit, source)
        show_text(self.target_edit, target)

    def find_depth_units(self) -> None:
        """The brackets task's ready view: units ranked by |correlation| with nesting depth."""
        self._with_streams(self._show_depth_units)

    def _with_streams(self, then) -> None:
        if self.streams is not None:
            then()
            return
        data = self.workspace.data if self.workspace is not None else None
        pairs = (data.val or data.train) if data is not None else []
        if not pairs:
            self.status.setText("No validation data to search: open a model with its data.")
            return
        from explorer.analysis.streams import state_streams

        workspace = self.workspace

        def ready(streams) -> None:
            if workspace is self.workspace:
                self.streams = streams
                then()

        self.status.setText("Reading the validation data…")
        self.runner.start("streams", state_streams, ready, workspace, pairs)

    # -- drawing --------------------------------------------------------------------------------

    def show_snapshot(self, snapshot) -> None:
        """Show a `HiddenSnapshot` (plain data), keeping the chosen layer and view."""
        self.snapshot = snapshot
        keep = self.layer_box.currentData()
        items = [(self._layer_title(layer), layer.name) for layer in snapshot.layers]
        for stack in [] if self.SHOWS_GATES else snapshot.stacks:
            items.append((f"{stack.stream}: residual-stream norm", (RESIDUAL, stack.stream)))
            items += [(f"{stack.stream}: {label} output", (stack.stream, k))
                      for k, label in enumerate(stack.layer_labels[1:])]
        if snapshot.lens is not None and not self.SHOWS_GATES:
            items.append(("logit lens", LENS))
        self._fill(self.layer_box, items, keep)
        source, target = elide(snapshot.source, 32), elide(snapshot.target, 32)
        self.status.setText(f"step {snapshot.step}: {source!r}" + (f" → {target!r}" if target else ""))
        self._on_layer_changed()

    def _layer_title(self, layer) -> str:
        stream = "" if layer.stream == "lm" else f"{layer.stream} "
        return f"{stream}{layer_label(layer.layer)}" + (" (backward)" if layer.reverse else "")

    @staticmethod
    def _fill(box: QComboBox, items, keep) -> None:
        if [box.itemData(i) for i in range(box.count())] == [d for _, d in items]:
            return
        box.blockSignals(True)
        box.clear()
        for text, data in items:
            box.addItem(text, data)
        index = box.findData(keep)
        box.setCurrentIndex(max(index, 0))
        box.blockSignals(False)

    def _on_layer_changed(self) -> None:
        layer = self.current_layer()
        quantities = []
        if layer is not None:
            quantities = [q for q in layer.quantities() if q not in ("h", "c") or not self.SHOWS_GATES]
        self._fill(self.quantity_box, [(QUANTITY_TITLES.get(q, q), q) for q in quantities],
                   self.quantity_box.currentData())
        self.quantity_box.setVisible(bool(quantities))
        self.refresh()

    def current_layer(self):
        if self.snapshot is None:
            return None
        return next((l for l in self.snapshot.layers if l.name == self.layer_box.currentData()), None)

    def current_matrix(self):
        """(matrix, row labels, tokens, stream name for matches) of the current view, or None."""
        view, snapshot = self.layer_box.currentData(), self.snapshot
        if snapshot is None or view is None or view == LENS:
            return None
        layer = self.current_layer()
        if layer is not None:
            quantity = self.quantity_box.currentData()
            if quantity is None:
                return None
            return layer.matrix(quantity), layer.row_labels(), layer.tokens, layer.name if quantity == "h" else None
        stack = next(s for s in snapshot.stacks if s.stream == view[1 if view[0] == RESIDUAL else 0])
        if view[0] == RESIDUAL:
            return stack.residual_norm, stack.layer_labels, stack.tokens, None
        k = view[1]
        rows = [f"dim {d}" for d in range(stack.block_outputs[k].shape[0])]
        return stack.block_outputs[k], rows, stack.tokens, f"{stack.stream}.layer{k}"  # its trace name

    def refresh(self) -> None:
        if self.layer_box.currentData() == LENS and self.snapshot is not None:
            self.lens_table.show_lens(self.snapshot.lens)
            self.stack.setCurrentWidget(self.lens_table)
            self.views.show_view()
            return
        self.stack.setCurrentWidget(self.heatmap)
        current = self.current_matrix()
        if current is None:
            if self.snapshot is not None:
                self.views.show_message(f"{self.TITLE}: nothing to show for this model's layers.")
            return
        self.views.show_view()
        matrix, rows, tokens, _ = current
        view = self.layer_box.currentData()
        residual = isinstance(view, tuple) and view[0] == RESIDUAL
        block = isinstance(view, tuple) and not residual
        self.heatmap.rows_are = "layers" if residual else "dimensions" if block else "units"
        self.heatmap.block = f"{view[0]} {layer_label(view[1])} output" if block else ""
        self.heatmap.value_name = self.quantity_box.currentData() or ("norm" if residual else "value")
        self.heatmap.set_matrix(matrix, rows, tokens)
        self.unit_box.setMaximum(max(0, matrix.shape[0] - 1))
        self.top_button.setEnabled(self.top_query() is not None)
        self.heatmap.set_title(self.layer_box.currentText() + (f", {self.quantity_box.currentText()}" if self.quantity_box.isVisible() else ""))
        self.heatmap.set_axis_titles("layer" if residual else "dimension" if block else "unit", "token")
        span = self.heatmap.span()
        if span is not None and span[1] <= matrix.shape[1]:
            self.select_span(*span)
        elif self.depth:
            self._show_depth_units()

    # -- LSTMVis selection ----------------------------------------------------------------------

    def threshold_value(self) -> float:
        return self.threshold.value() / 100

    def _on_threshold(self) -> None:
        self.threshold_label.setText(f"threshold {self.threshold_value():+.2f}")
        span = self.heatmap.span()
        if span is not None and self.snapshot is not None:
            self.select_span(*span)

    def select_span(self, start: int, end: int) -> None:
        """Units on over tokens [start, end) and off around them; then their matches."""
        from explorer.analysis.selection import select_units
        from explorer.analysis.top_examples import point_of_layer

        current = self.current_matrix()
        if current is None:
            return
        matrix, rows, tokens, stream_name = current
        if not self.heatmap.span() == (start, end):
            self.heatmap.show_span(start, end)
        self.selection = select_units(matrix, start, end, self.threshold_value())
        units = self.selection.units
        if len(units):
            self.unit_box.setValue(int(units[0]))
        self.show_traces(matrix[units], [rows[u] for u in units], tokens)
        text = "".join(tokens[start:end]) if all(len(t) <= 1 for t in tokens[start:end]) else " ".join(tokens[start:end])
        self.status.setText(f"{len(units)} unit(s) on over {text!r} and off around it (threshold {self.threshold_value():+.2f})")
        self.side_list.clear()
        self.side_list.hide()
        self.matches = None
        if len(units) and stream_name is not None:
            self._with_streams(lambda: self._show_matches(stream_name))
        point = point_of_layer(stream_name) if stream_name is not None else None
        # the Ablation panel offers these units ("From Hidden")
        self.bus.units_selected.emit((point, [int(u) for u in units]) if point and len(units) else None)

    def _show_matches(self, stream_name: str) -> None:
        from explorer.analysis.selection import find_matches, match_context

        if self.selection is None or stream_name not in self.streams:
            return
        stream = self.streams[stream_name]
        s = self.selection
        self.matches = find_matches(stream, s.units, s.threshold, query_length=s.end - s.start)
        self.side_list.clear()
        self.side_list.addItem(f"{len(self.matches)} match(es) in {stream.length:,} validation tokens:")
        for start, end in zip(self.matches.starts, self.matches.ends):
            before, match, after = match_context(stream, int(start), int(end))
            self.side_list.addItem(f"…{before}[{match}]{after}…")
        self.side_list.show()
        self.status.setText(self.status.text() + f"; {len(self.matches)} match(es) in the validation data")

    def _show_depth_units(self) -> None:
        from explorer.analysis.nesting import depth_units

        self.depth = depth_units(self.streams, top=10) if self.streams else []
        if not self.depth:
            return
        self.side_list.clear()
        self.side_list.addItem("units tracking bracket depth (Pearson r over the validation data):")
        for unit in self.depth:
            self.side_list.addItem(f"{unit.label}  r = {unit.correlation:+.3f}")
        self.side_list.show()
        self.status.setText(f"depth unit {self.depth[0].label}: r = {self.depth[0].correlation:+.3f}")

    def _on_side_item(self, item) -> None:
        """A depth unit clicked: show its layer and its trace over the probe text."""
        row = self.side_list.row(item) - 1
        if self.matches is None and 0 <= row < len(self.depth):
            unit = self.depth[row]
            self.layer_box.setCurrentIndex(max(0, self.layer_box.findData(unit.name)))
            current = self.current_matrix()
            if current is not None:
                matrix, rows, tokens, _ = current
                self.show_traces(matrix[[unit.unit]], [rows[unit.unit]], tokens)

    def top_query(self):
        """The chosen unit as an ActivityQuery, or None where the rows are no units (the
        residual stream's layers, the logit lens)."""
        from explorer.analysis.top_examples import ActivityQuery, point_of_layer

        current = self.current_matrix()
        view = self.layer_box.currentData()
        if current is None or (isinstance(view, tuple) and view[0] == RESIDUAL):
            return None
        layer = self.current_layer()
        name = layer.name if layer is not None else current[3]
        point = point_of_layer(name, self.quantity_box.currentData() or "h")
        unit = self.unit_box.value()
        if point is None or unit >= len(current[1]):
            return None
        return ActivityQuery((point,), unit, f"{self.layer_box.currentText()}, {current[1][unit]}")

    def request_top_examples(self) -> None:
        """Ask the Examples panel for the examples where the chosen unit is most active."""
        self.ask_top_examples(self.top_query(), "Choose a layer whose rows are units first.")

    def show_traces(self, values: np.ndarray, names: list[str], tokens: list[str]) -> None:
        """values (k, T): the units' lines over the text, or why there are none."""
        self.traces.show_units(values, names, tokens, self.threshold_value())
        self.traces_view.set_message(None if names else NO_UNIT_ON)

    # -- panel contract -------------------------------------------------------------------------

    def _on_probe(self, probe) -> None:
        """A probe (`explorer.events.ProbeSnapshot`, from the Prober or live from training) carries
        the hidden states of the probe text in the same pass as its attention."""
        hidden = getattr(probe, "hidden", None)
        if hidden is None or self.workspace is None or hidden.family != self.workspace.family:
            return
        if not self.held_until_shown(self.show_snapshot, hidden):
            self.show_snapshot(hidden)

    def _show_error(self, message: str) -> None:
        self.status.setText(message)

    def has_content(self) -> bool:
        return self.snapshot is not None and (self.current_matrix() is not None or self.layer_box.currentData() == LENS)

    def plot_items(self) -> dict[str, object]:
        # the traces only once units are selected (headless: never): no figure of empty axes
        heatmap = {} if self.views.empty else {"heatmap": self.heatmap.ci}
        traces = {} if self.traces_view.empty else {"traces": self.traces.plot}
        return {**heatmap, **traces}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.snapshot is None:
            return {}
        tables = hidden_tables(self.snapshot, self.SHOWS_GATES)
        if self.selection is not None and len(self.selection.units):
            tables["selection"] = self.traces.table()
        return tables


class GatesPanel(HiddenPanel):
    """The same panel on the gates only: LSTM i, f, g, o; GRU r, z, n; UGRNN u, s (one heatmap
    each). In the window the gates share the hidden panel's dock (its "show" box); this class is
    what `explorer export --plots gates` renders."""

    PANEL_ID = "gates"
    TITLE = "Gates"
    TOOLTIP = "Each gate's activation over the probe text: units down, tokens across."
    SHOWS_GATES = True

    def has_content(self) -> bool:
        return self.snapshot is not None and bool(self.snapshot.gate_names()) and self.current_matrix() is not None
