"""BLEU (seq2seq) or loss per token (language models) by source-length bucket, one line per
evaluation: the lecture notes' figure of RNNencdec against RNNsearch (Bahdanau et al., 2015), on
the user's own model, a pinned evaluation beside it (another checkpoint or step) and every run of
the Compare runs panel."""

from __future__ import annotations

import itertools

import numpy as np
import pyqtgraph as pg

from explorer.analysis.examples import ExampleTable, length_buckets
from explorer.ui.plot_style import add_legend, readable_axes

SERIES_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                  "#7f7f7f", "#bcbd22", "#17becf")  # cycled past ten lines


class LengthPlot:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        plot.showGrid(x=True, y=True, alpha=0.3)
        plot.setLabel("bottom", "source length in tokens (examples in the bucket)")
        self.legend = add_legend(plot)
        self.series: list[tuple[str, list]] = []  # (name, buckets)

    def set_tables(self, tables: list[tuple[str, ExampleTable]]) -> None:
        """One line per (name, table); the buckets are the first table's, so lines line up."""
        self.plot.clear()
        self.legend.clear()
        self.series = []
        axis = self.plot.getAxis("bottom")
        axis.setTicks(None)
        if not tables:
            return
        seq2seq = tables[0][1].seq2seq
        self.plot.setLabel("left", "corpus BLEU" if seq2seq else "mean loss per token")
        self.plot.setTitle("BLEU by source length" if seq2seq else "loss by source length")
        first = length_buckets(tables[0][1])
        width = first[0].high - first[0].low + 1
        # one tick per bucket, at its middle: its lengths and how many examples its point stands for
        axis.setTicks([[(_middle(b), f"{b.label} ({len(b.rows)})") for b in first]])
        top = 0.0
        for (name, table), colour in zip(tables, itertools.cycle(SERIES_COLOURS)):
            buckets = length_buckets(table, width=width) if table is not tables[0][1] else first
            x = np.array([_middle(b) for b in buckets], dtype=float)
            y = np.array([b.bleu if seq2seq else b.mean_loss for b in buckets], dtype=float)
            curve = self.plot.plot(x, y, pen=pg.mkPen(colour, width=2), symbol="o",
                                   symbolBrush=colour, symbolSize=7, name=name)
            curve.setToolTip(name)
            self.series.append((name, buckets))
            top = max(top, np.nanmax(y, initial=0.0))
        # from zero, so a gap between buckets reads at its true size (BLEU up to its 100 at most)
        top = top * 1.1 if top > 0 else 1.0
        self.plot.setYRange(0.0, min(top, 100.0) if seq2seq else top, padding=0)
        # half a bucket beside the first and last points: room for their ticks' labels
        self.plot.setXRange(first[0].low - width / 2, first[-1].high + 1 + width / 2, padding=0)

    def rows(self) -> list[list]:
        """(series, bucket, examples, BLEU, loss/token) rows for CSV."""
        return [[name, b.label, len(b.rows), b.bleu, b.mean_loss]
                for name, buckets in self.series for b in buckets]


def _middle(bucket) -> float:
    return (bucket.low + bucket.high) / 2


def make_length_widget() -> tuple[pg.PlotWidget, LengthPlot]:
    widget = pg.PlotWidget(axisItems=readable_axes("left", "bottom"))
    return widget, LengthPlot(widget.getPlotItem())
