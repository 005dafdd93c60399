"""Heatmap update speed: `HeatmapWidget.set_matrix` on a 256 x 256 attention map with token labels.

Target: an update (setImage in place) under 5 ms. Also times update + a full synchronous repaint of
the widget, which is what the user waits for. Run: `python benchmarks/bench_heatmap.py [size]`.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from PySide6.QtCore import qInstallMessageHandler  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from explorer.ui.heatmap import HeatmapWidget  # noqa: E402


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def main(app: QApplication, size: int = 256, repeats: int = 200) -> None:
    qInstallMessageHandler(lambda *_: None)  # the offscreen platform's propagateSizeHints notice
    widget = HeatmapWidget(row_title="query", col_title="key", value_name="weight")
    widget.resize(1000, 900)
    widget.show()
    labels = [f"tok{i}" for i in range(size)]
    rng = np.random.default_rng(0)
    maps = [softmax_rows(rng.normal(size=(size, size)) * 3).astype(np.float32) for _ in range(8)]
    widget.set_matrix(maps[0], labels, labels)
    app.processEvents()

    update_ms, paint_ms = [], []
    for i in range(repeats):
        matrix = maps[i % len(maps)]
        start = time.perf_counter()
        widget.set_matrix(matrix, labels, labels)
        update_ms.append((time.perf_counter() - start) * 1e3)
        start = time.perf_counter()
        widget.set_matrix(matrix, labels, labels)
        widget.viewport().repaint()  # synchronous paint: colour-mapping and drawing the image
        paint_ms.append((time.perf_counter() - start) * 1e3)

    def summary(values):
        return f"median {statistics.median(values):.3f} ms, p95 {np.percentile(values, 95):.3f} ms"

    print(f"heatmap {size}x{size} with {size} token labels per axis, {repeats} updates")
    print(f"  set_matrix (setImage in place):   {summary(update_ms)}")
    print(f"  set_matrix + synchronous repaint: {summary(paint_ms)}")
    verdict = "PASS" if statistics.median(update_ms) < 5.0 else "FAIL"
    print(f"  target: update under 5 ms -> {verdict}")
    widget.close()


if __name__ == "__main__":
    # the application outlives every widget: destroying it first crashes the interpreter at exit
    application = QApplication(sys.argv[:1])
    main(application, int(sys.argv[1]) if len(sys.argv) > 1 else 256)
