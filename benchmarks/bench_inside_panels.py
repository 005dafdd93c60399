"""The hidden and embeddings panels' drawing speed (issue 15).

Targets: the hidden panel redraws a 512-unit x 256-step heatmap in < 5 ms (ImageItem updated in
place); the embedding projection of a 50k-token vocabulary draws in < 1 s and pans smoothly.
Times: `UnitHeatmap.set_matrix` alone and with a synchronous repaint; `EmbeddingsPanel.show_data`
of a 50k x 256 embedding (the PCA runs in a worker before it: timed separately) with its repaint,
and one repaint per pan step when zoomed out (every point) and zoomed in (labels drawn).
Run: `python benchmarks/bench_inside_panels.py`.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from PySide6.QtCore import qInstallMessageHandler  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from explorer.analysis.embeddings import EmbeddingData, pca_2d, token_sets  # noqa: E402
from explorer.ui.bus import AppBus  # noqa: E402
from explorer.ui.panels.embeddings import EmbeddingsPanel  # noqa: E402
from explorer.ui.panels.inside_widgets import UnitHeatmap  # noqa: E402


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


def heatmap(app: QApplication, units: int = 512, steps: int = 256, repeats: int = 100) -> None:
    widget = UnitHeatmap(lambda *_: None, value_name="h")
    widget.resize(1000, 900)
    widget.show()
    rows, tokens = [f"l0:{u}" for u in range(units)], [f"t{i}" for i in range(steps)]
    rng = np.random.default_rng(0)
    frames = [np.tanh(rng.standard_normal((units, steps))).astype(np.float32) for _ in range(8)]
    widget.set_matrix(frames[0], rows, tokens)
    app.processEvents()
    update, painted = [], []
    for i in range(repeats):
        start = time.perf_counter()
        widget.set_matrix(frames[i % 8], rows, tokens)
        update.append(ms(start))
        start = time.perf_counter()
        widget.set_matrix(frames[(i + 1) % 8], rows, tokens)
        widget.viewport().repaint()
        painted.append(ms(start))
    print(f"hidden heatmap {units} x {steps}: set_matrix median {statistics.median(update):.2f} ms, "
          f"with repaint {statistics.median(painted):.1f} ms")


def embeddings(app: QApplication, vocab: int = 50_000, dim: int = 256) -> None:
    matrix = np.random.default_rng(1).standard_normal((vocab, dim)).astype(np.float32)
    tokens = [f"w{i}" for i in range(vocab)]
    start = time.perf_counter()
    data = EmbeddingData("input", tokens, matrix, pca_2d(matrix), token_sets(tokens))
    prepare = ms(start)
    panel = EmbeddingsPanel(AppBus())
    panel.resize(1100, 800)
    panel.show()
    app.processEvents()
    start = time.perf_counter()
    panel.show_data(data)
    panel.plot_widget.viewport().repaint()
    draw = ms(start)
    view = panel.plot.getViewBox()
    pans = {}
    for name, width in (("zoomed out", None), ("zoomed in", 0.02)):
        if width is not None:
            view.setRange(xRange=(0, width), yRange=(0, width), padding=0)
        times = []
        for _ in range(20):
            view.translateBy(x=(width or 1.0) / 20)
            panel.update_labels()  # what the label timer does once panning pauses
            start = time.perf_counter()
            panel.plot_widget.viewport().repaint()
            times.append(ms(start))
        pans[name] = statistics.median(times)
    print(f"embeddings {vocab:,} x {dim}: data (PCA, sets) {prepare:.0f} ms in the worker; "
          f"show_data + first paint {draw:.0f} ms; pan repaint median {pans['zoomed out']:.0f} ms "
          f"zoomed out, {pans['zoomed in']:.0f} ms zoomed in ({len(panel.labelled_ids())} labels)")
    panel.shutdown()


def main() -> None:
    app = QApplication.instance() or QApplication([])
    qInstallMessageHandler(lambda *_: None)
    heatmap(app)
    embeddings(app)


if __name__ == "__main__":
    main()
