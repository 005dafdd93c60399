"""What the attribution and ablation panels share for their long computations: Stop (and Esc)
ends the running job at its next batch or head, and the progress bar empties once it is idle.

A panel using it has `runner` (a JobRunner), `stop_event` (the threading.Event the job polls),
`status` (its one-line QLabel), `stop_button` and `progress`.
"""

from __future__ import annotations


class StoppableJob:
    def stop(self) -> None:
        if self.runner.busy:
            self.stop_event.set()
            self.runner.cancel()
            self.status.setText("Stopped.")

    def _on_busy(self, busy: bool) -> None:
        self.stop_button.setEnabled(busy)
        if not busy:
            self.progress.setValue(0)
