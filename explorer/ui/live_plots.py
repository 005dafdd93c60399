"""What the panels that follow training share: a growing buffer of points, and the redraw
cadence that keeps their redraws from slowing training down."""

from __future__ import annotations

import numpy as np

from explorer.export.curves import upserted


def step_marker():
    """The vertical line that marks the step a run's snapshot shows (explorer/ui/timeline.py)."""
    import pyqtgraph as pg
    from PySide6.QtCore import Qt

    line = pg.InfiniteLine(angle=90, movable=False,
                           pen=pg.mkPen((150, 90, 200), width=1.5, style=Qt.PenStyle.DashLine))
    line.setVisible(False)
    return line


def place_marker(line, step) -> None:
    """Show `line` at `step`, or hide it (None: no snapshot is shown)."""
    line.setVisible(step is not None)
    if step is not None:
        line.setValue(step)
        line.setToolTip(f"The panels show the snapshot of step {step}")


class GrowingBuffer:
    """Columns of float64 that grow by doubling; `view()` is the filled part, no copy."""

    def __init__(self, columns: int, capacity: int = 1024) -> None:
        self._data = np.empty((capacity, columns), dtype=np.float64)
        self.size = 0

    def extend(self, rows: np.ndarray) -> None:
        needed = self.size + len(rows)
        if needed > len(self._data):
            grown = np.empty((max(needed, 2 * len(self._data)), self._data.shape[1]), np.float64)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : needed] = rows
        self.size = needed

    def view(self) -> np.ndarray:
        return self._data[: self.size]  # (N, columns)

    def clear(self) -> None:
        self.size = 0

    def upsert(self, row) -> None:
        """Put `row` in order of its first column (the step): explorer.export.curves.upserted."""
        rows = upserted(self.view(), row)
        self.clear()
        self.extend(rows)


# Data arrives up to ~30 times a second, but every redraw repaints the whole five-plot view, in
# Python on the GUI thread, holding the GIL that the training thread needs: redrawn per batch, the
# curves cost in-app training a fifth of its speed (benchmarks/bench_gui.py). So batches share
# redraws: a batch after a quiet spell is drawn at once, and later ones wait for the interval,
# which grows with what a redraw and its paint cost (a bigger view, a slower machine) so that the
# curves take at most REDRAW_BUDGET of the GUI thread's time. At 1% (2% before issue 37) the
# default layout's curves redraw about once a second while the app trains on this 2-core VM, and
# the GUI thread's share of a core fell by about a tenth (benchmarks/RESULTS.md, 2026-11-28).
REDRAW_INTERVAL_MS = 300
MAX_REDRAW_INTERVAL_MS = 2000
REDRAW_BUDGET = 0.01
# A second view of the same numbers (the gradient panel's norm plot repeats the curves' ‖g‖) is
# redrawn at most once a second: at 300 ms it was a third of the soak's paints with every panel in
# view, each adding to the frame the probes' heatmaps and the curves also paint.
SECONDARY_REDRAW_INTERVAL_MS = 1000
