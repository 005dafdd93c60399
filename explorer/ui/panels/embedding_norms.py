"""Embedding norms: the length ‖e‖ of each probe token's input embedding (the source's, for an
encoder-decoder), one bar per token, redrawn with every probe while training moves the weights.

A live panel in two pieces: `token_norms`, the Qt-free function of (model, probe input, step) its
panel registry entry names as `live`, which every probe runs while the panel is in sight (in the
training thread between steps, throttled with the probes); and the panel, which draws what the
snapshot carries for it (`ProbeSnapshot.live["embedding_norms"]`).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout

from explorer.analysis.activations import provider_for
from explorer.ui.empty_state import EmptyState
from explorer.ui.export import install_export_menu
from explorer.ui.panels.base import Panel
from explorer.ui.panels.decoding_widgets import BarChart

WAITING = "The norm of each probe token's input embedding appears with the next probe."
NO_MODEL = "Open or create a model: the norm of each probe token's embedding is drawn here."


def token_norms(model, encoded, step: int) -> dict:
    """‖e_t‖ of the embedding row of every token the model reads first (an LM's text, an
    encoder-decoder's source), with the tokens and which embedding it is. Plain data."""
    embeddings = provider_for(model).embeddings(model)
    side = "source" if "source" in encoded.labels else "tokens"
    which = "source" if side == "source" and "source" in embeddings else "input"
    ids = encoded.inputs[0][0].to(embeddings[which].device)  # (T,) the first input's one row
    norms = embeddings[which].detach()[ids].float().norm(dim=-1)  # (T,)
    return {"tokens": list(encoded.labels[side]), "norms": norms.cpu().numpy(), "which": which,
            "step": step}


class EmbeddingNormsPanel(Panel):
    PANEL_ID = "embedding_norms"
    TITLE = "Embedding norms"
    TOOLTIP = ("The length of each probe token's input embedding; while training, it is redrawn "
               "with every probe: rare tokens' rows move least.")

    def __init__(self, bus, parent=None) -> None:
        super().__init__(bus, parent)
        self.data: dict | None = None
        self.plot_widget = pg.GraphicsLayoutWidget()
        self.plot = self.plot_widget.addPlot()
        self.chart = BarChart(self.plot, "‖e‖")
        self.view = EmptyState(self.plot_widget, NO_MODEL)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)
        bus.probe.connect(self.show_snapshot)
        bus.workspace_changed.connect(self._clear)
        install_export_menu(self)

    def _clear(self, workspace) -> None:
        if not self.bus.state.same_model:
            self.data = None
            self.chart.clear()
            self.view.show_message(WAITING if workspace is not None else NO_MODEL)

    def show_snapshot(self, snapshot) -> None:
        data = snapshot.live.get(self.PANEL_ID)
        if data is None or self.held_until_shown(self.show_snapshot, snapshot):
            return
        self.data = data
        self.chart.set_data(data["tokens"], data["norms"])
        self.chart.set_title(f"‖{data['which']} embedding‖ of each token, step {data['step']}")
        self.view.show_view()

    def has_content(self) -> bool:
        return self.data is not None

    def plot_items(self) -> dict[str, object]:
        return {"norms": self.plot} if self.data is not None else {}

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        if self.data is None:
            return {}
        rows = [[i, token, float(norm)] for i, (token, norm) in
                enumerate(zip(self.data["tokens"], np.asarray(self.data["norms"])))]
        return {"norms": (["position", "token", f"{self.data['which']}_norm"], rows)}
