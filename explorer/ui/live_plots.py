"""What the panels that follow training share: a growing buffer of points, and the redraw
cadence that keeps their redraws from slowing training down."""

from __future__ import annotations

import numpy as np


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


# Data arrives up to ~30 times a second, but every redraw repaints the whole five-plot view, in
# Python on the GUI thread, holding the GIL that the training thread needs: redrawn per batch, the
# curves cost in-app training a fifth of its speed (benchmarks/bench_gui.py). So batches share
# redraws: a batch after a quiet spell is drawn at once, and later ones wait for the interval,
# which grows with what a redraw and its paint cost (a bigger view, a slower machine) so that the
# curves take at most REDRAW_BUDGET of the GUI thread's time.
REDRAW_INTERVAL_MS = 300
MAX_REDRAW_INTERVAL_MS = 2000
REDRAW_BUDGET = 0.02
