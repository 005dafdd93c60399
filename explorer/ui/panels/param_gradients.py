"""The gradient-flow panel's per-layer parameter gradient: ||∂L/∂θ|| over each layer's parameters
on the probe input (explorer.analysis.param_gradients), embeddings first, output head last. It
applies to every family, Hugging Face models included; the plot is made by the panel."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from explorer.analysis.gradients import LOG_FLOOR
from explorer.export.gradients import param_gradients

COLOUR = "#2ca02c"


class ParamGradientCurve:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self.curve = plot.plot([], [], pen=pg.mkPen(COLOUR, width=2), symbol="o", symbolBrush=COLOUR)
        self.labels: list[str] = []
        self.norms = np.zeros(0)

    def show(self, snapshot) -> None:
        """Draw a ProbeSnapshot's `grad_params` (a snapshot without them clears the curve)."""
        self.labels, self.norms = param_gradients(snapshot)
        if not len(self.norms):
            self.curve.setData([], [])
            return
        self.curve.setData(np.arange(len(self.norms)), np.maximum(self.norms, LOG_FLOOR))
        self.plot.getAxis("bottom").set_labels(self.labels)
        self.plot.setXRange(-0.5, len(self.norms) - 0.5, padding=0)
