"""The gradient-flow panel's tables without Qt: the probe's gradients through time and depth, the
per-layer parameter gradient, the cells side by side, clipping, the a_h^k playground and the
history over training. The panel's CSV export and `explorer export --plots gradients --format
csv` (explorer/export/headless.py) both call `gradient_tables`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from explorer.analysis.gradients import GradientHistory
from explorer.analysis.labels import stack_layer_label
from explorer.export.tables import Table, matrix_table


def param_gradients(snapshot) -> tuple[list[str], np.ndarray]:
    """A ProbeSnapshot's ||∂L/∂θ|| per layer with its short labels (none: empty)."""
    from explorer.analysis.param_gradients import group_label

    norms = snapshot.grad_params
    if norms is None or not len(norms):
        return [], np.zeros(0)
    return [group_label(g) for g in snapshot.grad_params_labels], np.asarray(norms, dtype=np.float64)


def param_table(labels: list[str], norms: np.ndarray) -> dict[str, Table]:
    if not len(norms):
        return {}
    return {"params": (["layer", "param_grad_norm"], [[label, float(v)] for label, v in zip(labels, norms)])}


def recorded_norms(history) -> np.ndarray:
    """A workspace's recorded global gradient norms, (N, 3): step, norm before and after
    clipping (the training steps of its history that have one), what the clipping plot draws."""
    from explorer.export.curves import history_rows

    train_rows, _ = history_rows(history)  # (N, 6): TRAIN_COLUMNS
    recorded = train_rows[np.isfinite(train_rows[:, 4])] if len(train_rows) else train_rows
    return recorded[:, [0, 4, 5]] if len(recorded) else np.zeros((0, 3))


@dataclass
class GradientView:
    """What the gradients panel shows besides the probe: the parameter gradient it drew, the
    cells compared (cell -> norms), the clipping norms (N, 3: step, before, after) and τ, the
    playground's a_h, tanh and a_h^k derivative, and the history with its chosen layer."""

    params: tuple[list[str], np.ndarray]
    playground: tuple[float, bool, np.ndarray]
    history: GradientHistory
    layer: str | None
    cells: dict[str, np.ndarray] = field(default_factory=dict)
    clipping: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    clip: float | None = None


def gradient_tables(snapshot, view: GradientView) -> dict[str, Table]:
    tables = {}
    if snapshot is not None and snapshot.grad_time:
        names = list(snapshot.grad_time)
        length = max(len(v) for v in snapshot.grad_time.values())
        labels = snapshot.grad_time_labels.get(names[0], [])
        rows = []
        for t in range(length):
            norms = [snapshot.grad_time[n][t] if t < len(snapshot.grad_time[n]) else "" for n in names]
            rows.append([t, labels[t] if t < len(labels) else "", *norms])
        shown = [stack_layer_label(name) for name in names]
        tables["through_time"] = (["t", f"token ({shown[0]})", *shown], rows)
    if snapshot is not None and snapshot.grad_depth is not None:
        names = [stack_layer_label(name) for name in snapshot.grad_depth_labels]
        tables["depth"] = (["block", "grad_norm"], list(map(list, zip(names, snapshot.grad_depth))))
    tables.update(param_table(*view.params))
    if view.cells:
        cells = list(view.cells)
        length = len(view.cells[cells[0]])
        tables["cells"] = (["t", *cells], [[t, *[view.cells[c][t] for c in cells]] for t in range(length)])
    if len(view.clipping):
        rows = [[int(s), before, after, view.clip or ""] for s, before, after in view.clipping.tolist()]
        tables["clipping"] = (["step", "grad_norm", "grad_norm_clipped", "tau"], rows)
    a_h, use_tanh, derivative = view.playground
    tables["playground"] = (["k", f"dh_k/dh_0 (a_h={a_h:g}, tanh={use_tanh})"],
                            [[k, v] for k, v in enumerate(derivative)])
    matrix = view.history.matrix(view.layer)
    if matrix is not None:
        tables["history"] = matrix_table(matrix, [str(s) for s in view.history.steps],
                                         [str(t) for t in range(matrix.shape[1])], "step \\ t (log10)")
    return tables
