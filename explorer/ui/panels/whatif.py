"""What if: pin a source as the original, edit it, and see both side by side.

Unpinned, the left side follows the probe. Pin it (or an Examples row: its "What if…" button)
as the original; type an edit of the source and press Enter. Each side shows the greedy output (tokens the edit inserted or changed in
colour), its log-probability, the last layer's cross-attention (a language model's self-attention)
and the attribution map (gradient x input). The work runs in the panel's job runner with progress
and Stop; a bad edit (empty, longer than the model reads) is one line and the original stays
pinned. Unpin returns to following the probe; a new model (or snapshot) recomputes the pinned
original with its weights.
"""

from __future__ import annotations

import html
import threading

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from explorer.analysis.whatif import (
    STEPS_PER_SIDE,
    StepCounter,
    WhatIf,
    WhatIfSide,
    side_table,
    what_if,
    whatif_side,
)
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu, run_export_dialog
from explorer.ui.heatmap import HeatmapWidget
from explorer.ui.neighbours_view import isolated_workspace
from explorer.ui.panels.base import Panel, elide, push_button
from explorer.ui.panels.decoding_widgets import show_text
from explorer.ui.progress_bar import FrameProgressBar

CHANGED = "#d62728"  # inserted or changed output tokens
NO_MODEL = "Open or create a model: pin a source, edit it, and compare the two here."
NOTHING_PINNED = ("Pin the probe (or an Examples row's \"What if…\") as the original, then edit "
                  "its source here and press Enter.")


def _pin_job(workspace, source: str, progress, stop: threading.Event) -> WhatIfSide:
    return whatif_side(workspace, source, steps=StepCounter(STEPS_PER_SIDE, progress, stop.is_set))


def _edit_job(workspace, original: WhatIfSide, source: str, progress, stop: threading.Event) -> WhatIf:
    return what_if(workspace, original, source, progress=progress, should_stop=stop.is_set)


def output_html(tokens: list[str], changed) -> str:
    """The output's tokens, those the edit changed in colour and bold."""
    parts = []
    for token, mark in zip(tokens, changed):
        text = html.escape(token)
        parts.append(f'<b style="color:{CHANGED}">{text}</b>' if mark else text)
    return " ".join(parts)


class SideView:
    """One side's widgets: its texts (source, output, log-probability) and its two maps, which
    the panel lays out beside the other side's (the maps in tabs: the dock is not tall)."""

    def __init__(self, title: str) -> None:
        self.title = QLabel(f"<b>{title}</b>")
        self.source = QLabel()
        self.output = QLabel()
        self.logprob = QLabel()
        for label in (self.source, self.output, self.logprob):
            label.setTextInteractionFlags(Qt.TextSelectableByMouse)
            label.setWordWrap(True)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.output.setToolTip("The greedy output; tokens the edit inserted or changed are red")
        self.logprob.setToolTip("Teacher-forced log p(output | source), as `explorer score` gives it")
        self.attention = HeatmapWidget("viridis", levels=(0.0, 1.0), row_title="output",
                                       col_title="source", value_name="weight")
        self.attribution = HeatmapWidget("CET-D1", levels=None, symmetric=True,
                                         row_title="output token", col_title="input token",
                                         value_name="attribution")
        self.clear()

    def texts(self) -> QWidget:
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        for label in (self.title, self.source, self.output, self.logprob):
            layout.addWidget(label)
        return box

    def clear(self) -> None:
        self.source.setText("")
        self.output.setText("")
        self.logprob.setText("")
        self.attention.setVisible(False)
        self.attribution.setVisible(False)

    def show_side(self, side: WhatIfSide, changed) -> None:
        self.source.setText(f"source: {html.escape(side.source)}")
        self.output.setText(f"output: {output_html(side.output_tokens, changed)}")
        self.logprob.setText(f"log p = {side.logprob:.4f} ({len(side.output_tokens)} tokens)")
        self.attention.setVisible(side.attention.size > 0)
        if side.attention.size:
            self.attention.set_matrix(side.attention, side.attention_rows, side.attention_columns)
            self.attention.set_title(side.attention_title)
            cross = side.attention_title.startswith("cross")
            self.attention.set_axis_titles("output" if cross else "query position",
                                           "source" if cross else "key position")
        self.attribution.setVisible(True)
        self.attribution.set_matrix(side.attribution, side.attribution_rows, side.attribution_columns)
        self.attribution.set_title(f"attribution ({side.method})")


def _side_by_side(left: QWidget, right: QWidget) -> QWidget:
    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(left, 1)
    layout.addWidget(right, 1)
    return box


class WhatIfPanel(Panel):
    PANEL_ID = "whatif"
    TITLE = "What if"
    TOOLTIP = ("Pin a source as the original, edit it, and compare outputs, log-probabilities, "
               "attention and attribution side by side (Enter compares)")

    progressed = Signal(int, int)  # from the runner's thread, delivered on the GUI thread
    computed = Signal()  # a pinned side or a comparison arrived

    def __init__(self, bus, parent: QWidget | None = None) -> None:
        super().__init__(bus, parent)
        self.original: WhatIfSide | None = None  # the left side: the probe's, or the pinned one
        self.pinned = False
        self._pinning = False  # the newest job computes a side to pin (not the probe's)
        self.result: WhatIf | None = None
        self.message = ""
        self._stop = threading.Event()
        self.runner = self.job_runner("what if")
        self.runner.done.connect(self._on_done)
        self.runner.failed.connect(lambda _job, message: self._say(message))
        self.runner.busy_changed.connect(lambda busy: self.stop_button.setEnabled(busy))
        self.progressed.connect(self._on_progress)

        self.pin_button = push_button("Pin probe", "Pin the probe's source as the original", self.pin_probe)
        self.unpin_button = push_button("Unpin", "Forget the original: back to the plain view", self.unpin)
        self.edit_box = QLineEdit()
        self.edit_box.setPlaceholderText("edit the source here, then Enter")
        self.edit_box.setToolTip("The edited source: Enter compares it with the pinned original")
        self.edit_box.returnPressed.connect(self.compare)
        self.compare_button = push_button("Compare", "Compare the edit with the original (Enter)",
                                           self.compare)
        self.stop_button = push_button("Stop", "Stop the computation; the original stays pinned", self.stop)
        self.stop_button.setEnabled(False)
        self.export_button = push_button("Export…", "PNG, SVG or CSV of both sides",
                                          lambda: run_export_dialog(self))
        self.progress = FrameProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.setToolTip("Steps done: greedy output, score, attention, attribution per side")
        self.status = QLabel(NOTHING_PINNED)
        self.status.setWordWrap(True)
        self.sides = {"original": SideView("Probe (not pinned)"), "edited": SideView("Edit")}

        top = QHBoxLayout()
        for widget in (self.pin_button, self.unpin_button, self.edit_box, self.compare_button,
                       self.stop_button, self.progress, self.export_button):
            top.addWidget(widget, 1 if widget is self.edit_box else 0)
        original, edited = self.sides["original"], self.sides["edited"]
        self.maps = QTabWidget()
        self.maps.addTab(_side_by_side(original.attention, edited.attention), "Attention")
        self.maps.addTab(_side_by_side(original.attribution, edited.attribution), "Attribution")
        self.maps.setToolTip("Attention: the last layer's, mean of heads. Attribution: gradient x "
                             "input of each output token's log-probability")
        body = QWidget()
        body_layout = QVBoxLayout(body)
        body_layout.setContentsMargins(0, 0, 0, 0)
        body_layout.addWidget(_side_by_side(original.texts(), edited.texts()))
        body_layout.addWidget(self.maps, 1)
        self.view = EmptyState(body, NO_MODEL)  # no side yet: one line, no empty maps
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(self.view, 1)
        self._enable()
        bus.whatif_requested.connect(self.pin)
        bus.workspace_changed.connect(self._on_workspace)
        bus.probe_input_changed.connect(lambda source, _target: self.follow(source))
        install_export_menu(self)

    def applies_to(self, workspace) -> bool:
        from explorer.families import family_of

        return workspace is None or family_of(workspace.model).decodes  # a masked LM has no output

    def _enable(self) -> None:
        for widget in (self.unpin_button, self.edit_box, self.compare_button):
            widget.setEnabled(self.pinned)
        self.sides["original"].title.setText("<b>Original (pinned)</b>" if self.pinned
                                             else "<b>Probe (not pinned)</b>")

    # -- work ------------------------------------------------------------------------------------

    def pin_probe(self) -> int:
        return self.pin(self.probe_text[0])

    def pin(self, source: str) -> int:
        """Compute `source`'s side in the background and pin it; -1 when there is no model."""
        self.edit_box.clear()  # a new original: the last edit was of another source
        return self._side(source, pin=True)

    def follow(self, source: str) -> int:
        """Unpinned: show the probe's side on the left; -1 when pinned (or no model)."""
        if self.pinned or (self._pinning and self.runner.busy):  # a pin on its way wins
            return -1
        return self._side(source, pin=False)

    def _side(self, source: str, pin: bool) -> int:
        if self.workspace is None:
            self._say("no model yet: train one or open a checkpoint")
            return -1
        if not source.strip():
            return -1 if not pin else self._say_and_fail("the probe's source is empty: nothing to pin")
        self._pinning = pin
        return self._submit(_pin_job, source, f"pinning {elide(source)!r}…" if pin else "")

    def _say_and_fail(self, message: str) -> int:
        self._say(message)
        return -1

    def compare(self) -> int:
        """The edit in the box beside the pinned original; -1 when nothing is pinned."""
        if not self.pinned or self.original is None or self.workspace is None:
            return self._say_and_fail(NOTHING_PINNED)
        self._pinning = True
        return self._submit(_edit_job, self.original, self.edit_box.text(), "comparing the edit…")

    def _on_workspace(self, workspace) -> None:
        """New weights: the pinned original (and the edit) again with them, or the probe's side."""
        if workspace is None:
            self.unpin()
        elif self.pinned and self.original is not None:
            self._pinning = True
            self._submit(_pin_job, self.original.source, "the pinned original with the new weights…")
        else:
            self.follow(self.probe_text[0])

    def _submit(self, job, *args) -> int:
        *args, message = args
        self._stop.set()  # the job it supersedes stops between its steps
        self._stop = threading.Event()
        self.progress.setValue(0)
        self._say(message)
        return self.runner.submit(job, isolated_workspace(self.workspace), *args,
                                  self.progressed.emit, self._stop)

    def stop(self) -> None:
        self._stop.set()
        if self.runner.busy:
            self.runner.cancel()
            self._say("stopped; the original stays pinned")

    def unpin(self) -> None:
        """Back to following the probe."""
        self.stop()
        self.pinned, self.original, self.result = False, None, None
        for view in self.sides.values():
            view.clear()
        self._enable()
        self._say(NOTHING_PINNED)
        if self.workspace is not None:
            self.follow(self.probe_text[0])

    def _on_progress(self, done: int, total: int) -> None:
        if self.runner.busy:
            self.progress.setRange(0, total)
            self.progress.setValue(done)

    def _on_done(self, _job, result) -> None:
        self.progress.setValue(self.progress.maximum())
        if isinstance(result, WhatIfSide):
            was_pinned, edit = self.pinned, self.edit_box.text()
            self.original, self.result, self.pinned = result, None, self._pinning
            self.sides["original"].show_side(result, [False] * len(result.output_tokens))
            self.sides["edited"].clear()
            self._enable()
            if self.pinned and was_pinned and edit and edit != result.source:
                self.compare()  # new weights: the edit again beside the original
            elif self.pinned:
                show_text(self.edit_box, result.source)
                self._say("pinned: edit the source above and press Enter")
            else:
                self._say(NOTHING_PINNED)
        else:
            self.result = result
            self.sides["original"].show_side(result.original, result.diff.original)
            self.sides["edited"].show_side(result.edited, result.diff.edited)
            changed = int(result.diff.edited.sum())
            self._say("the same output" if result.diff.unchanged else
                      f"{changed} output token(s) inserted or changed; "
                      f"log p changed by {result.logprob_change:+.4f}")
        self.computed.emit()

    def _say(self, message: str) -> None:
        self.message = message
        self.status.setText(message)
        self.view.set_message(None if self.original is not None else
                              NO_MODEL if self.workspace is None else message or "Computing…")

    # -- panel contract --------------------------------------------------------------------------

    def has_content(self) -> bool:
        return self.original is not None

    def plot_items(self) -> dict[str, object]:
        items = {}
        if self.original is None:
            return items  # no figure of empty maps
        for name, view in self.sides.items():
            if not view.attention.isHidden():
                items[f"{name}_attention"] = view.attention.ci
            if not view.attribution.isHidden():
                items[f"{name}_attribution"] = view.attribution.ci
        return items

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.result is not None:
            return {"outputs": self.result.table()}
        if self.original is not None:
            return {"outputs": side_table([("original", self.original,
                                            [False] * len(self.original.output_tokens))])}
        return {}

    def shutdown(self) -> None:
        self._stop.set()
        super().shutdown()
