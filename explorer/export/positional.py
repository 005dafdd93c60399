"""The positional panel's numbers without Qt: which table it shows for a model, the M_k fit and its
residuals, T5's relative-position bias, and the tables it exports. The panel
(explorer/ui/panels/positional.py) and `explorer export --plots positional --format csv`
(explorer/export/headless.py) both call these, so both write the same files.

A model whose positional modules are not ours (Hugging Face) is read through its family's
registry entry (`positions`, `relative_bias`, `no_positions_reason`), never by importing it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.analysis import positional as pe
from explorer.export.tables import Table, matrix_table

MAX_POSITIONS = 1024
# M_k is a d x d least-squares fit per shift: at GPT-2's d = 768 one fit takes seconds, so wider
# tables skip the relative-positions page (one line why) rather than stall the window
MAX_FIT_DIMS = 256
SHIFTS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
CURVE_COUNT = 7  # the panel's curve colours
# the panel's settings as it opens
DEFAULT_DIMS = 64
DEFAULT_SHIFT = 4
DEFAULT_CURVE_DIMS = "0, 2, 8, 20"
DEFAULT_SIMILARITY = "cosine"
DEFAULT_BIAS_LENGTH = 32  # query and key positions of the relative-position bias


def parse_dims(text: str, dim: int) -> list[int]:
    """The dimensions named in `text` ("0, 2, 8"), below `dim`, each once, CURVE_COUNT at most."""
    dims = []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part.isdigit() and int(part) < dim and int(part) not in dims:
            dims.append(int(part))
    return dims[:CURVE_COUNT]


def reference_positions(max_len: int, dim: int) -> int:
    """Positions for the sinusoidal reference: at least the model's, and twice d, so that
    PE(n+k) ≈ PE(n)·M_k is fitted on more (n, n+k) pairs than M_k has rows for every k < d
    (with fewer pairs any table fits exactly and the fit shows nothing)."""
    return min(max(max_len, 2 * dim), MAX_POSITIONS)


def fit_is_a_test(table: np.ndarray, shift: int) -> bool:
    """More (n, n+k) pairs than dimensions: only then can the least-squares fit fail."""
    return table.shape[0] - shift > table.shape[1]


def shifts_worth_fitting(table: np.ndarray) -> list[int]:
    return [k for k in SHIFTS if fit_is_a_test(table, k)]


def shift_fit(table: np.ndarray, shift: int) -> pe.ShiftFit | None:
    """M_k fitted on `table`, or None: too wide to fit (MAX_FIT_DIMS) or too few positions."""
    if table.shape[1] > MAX_FIT_DIMS or not fit_is_a_test(table, shift):
        return None
    return pe.fit_shift_map(table, shift)


def residuals_by_shift(table: np.ndarray | None) -> tuple[list[int], np.ndarray]:
    """Relative residual of M_k for every shift worth fitting (none past MAX_FIT_DIMS)."""
    if table is None or table.shape[1] > MAX_FIT_DIMS:
        return [], np.array([])
    shifts = shifts_worth_fitting(table)
    return shifts, pe.shift_residuals(table, shifts) if shifts else np.array([])


@dataclass
class OpenedPositions:
    """What the panel takes from a model: its table (or None) with one line on it, and the
    reference's size (d, positions), or None to keep the panel's."""

    found: pe.ModelPositions | None
    note: str
    sizes: tuple[int, int] | None

    def compares_model(self, shift: int) -> bool:
        """The model's table is the one compared, unless it is too short to test M_k on."""
        return self.found is not None and fit_is_a_test(self.found.table, shift)


def _family(model):
    from explorer.errors import UserError
    from explorer.families import family_of

    if not hasattr(getattr(model, "config", None), "family"):
        return None
    try:
        return family_of(model)
    except UserError:  # a family the registry does not know
        return None


def opened_positions(model) -> OpenedPositions:
    """A Transformer's d_model and max_len and its table; a model of a family that reads its own
    positions (Hugging Face): the table it has, whatever its size, or its reason for none."""
    family, config = _family(model), getattr(model, "config", None)
    found, note, sizes = None, "", None
    if family is not None and family.positions is not None:
        found = pe.model_positions(model, MAX_POSITIONS)
        if found is not None:
            note = found.note
            sizes = (found.table.shape[1], reference_positions(*found.table.shape))
        elif family.no_positions_reason is not None:
            note = family.no_positions_reason(model)
    elif config is not None and hasattr(config, "d_model"):
        positions = reference_positions(config.max_len, config.d_model)
        sizes = (config.d_model, positions)
        found = pe.model_positions(model, positions)
    return OpenedPositions(found, note, sizes)


def relative_biases(model, length: int) -> list:
    """Every stack's relative-position bias on `length` positions, from the model's family
    (T5: explorer.hf.positions.RelativeBias); empty for a model without one."""
    family = _family(model)
    if family is None or family.relative_bias is None:
        return []
    return family.relative_bias(model, length)


def relative_bias_tables(bias, head: int) -> dict[str, Table]:
    """One stack's bias for one head (query x key) and every head's bias against distance."""
    if bias is None:
        return {}
    positions = [str(n) for n in range(bias.bias.shape[1])]
    return {
        "relative_bias": matrix_table(bias.bias[head], positions, positions, "query"),
        "relative_by_distance": (
            ["distance", *[f"head{h + 1}" for h in range(len(bias.by_distance))]],
            [[int(d), *bias.by_distance[:, i].tolist()] for i, d in enumerate(bias.distances)]),
    }


@dataclass
class PositionalView:
    """What the panel draws: the sinusoidal reference, the dimensions drawn as curves, the
    similarity of the compared table, the model's table, the fit, the residuals of each table
    ("sinusoidal", "model" -> shifts, residuals), and the relative-bias tables."""

    sinusoid: np.ndarray  # (N, D)
    curve_dims: list[int]
    similarity: np.ndarray  # (N', N')
    model: np.ndarray | None
    fit: pe.ShiftFit | None
    residuals: dict[str, tuple[list[int], np.ndarray]]
    relative: dict[str, Table]


def positional_tables(view: PositionalView) -> dict[str, Table]:
    table = view.sinusoid
    positions = [str(n) for n in range(table.shape[0])]
    dims = [f"dim{i}" for i in range(table.shape[1])]
    similar = [str(n) for n in range(len(view.similarity))]
    tables = {
        "matrix": matrix_table(table, positions, dims, "position"),
        "curves": (["position", *[f"dim{i}" for i in view.curve_dims]],
                   [[n, *table[n, view.curve_dims].tolist()] for n in range(table.shape[0])]),
        "similarity": matrix_table(view.similarity, similar, similar, "position"),
    }
    if view.model is not None:
        found = view.model
        tables["model"] = matrix_table(found, [str(n) for n in range(found.shape[0])],
                                       [f"dim{i}" for i in range(found.shape[1])], "position")
    if view.fit is not None:
        names = [f"dim{i}" for i in range(len(view.fit.matrix))]
        tables["shift_map"] = matrix_table(view.fit.matrix, names, names, f"M_{view.fit.shift}")
    shifts, sinusoidal_residuals = view.residuals["sinusoidal"]
    model_by_shift = dict(zip(*view.residuals["model"]))
    tables.update(view.relative)
    tables["relative"] = (
        ["shift_k", "relative_residual_sinusoidal", "relative_residual_model"],
        [[k, r, model_by_shift.get(k, "")] for k, r in zip(shifts, sinusoidal_residuals)],
    )
    return tables


def opening_view(model) -> PositionalView:
    """The panel's view as it opens on `model`: its default settings, the model's own table
    compared when it is long enough, the first stack's bias for head 1."""
    opened = opened_positions(model)
    dims, positions = opened.sizes or (DEFAULT_DIMS, reference_positions(0, DEFAULT_DIMS))
    sinusoid = pe.sinusoidal(positions, dims, int(pe.DEFAULT_BASE))
    model_table = None if opened.found is None else opened.found.table
    chosen = model_table if opened.compares_model(DEFAULT_SHIFT) else sinusoid
    biases = relative_biases(model, DEFAULT_BIAS_LENGTH)
    return PositionalView(
        sinusoid, parse_dims(DEFAULT_CURVE_DIMS, dims), pe.similarity(chosen, DEFAULT_SIMILARITY),
        model_table, shift_fit(chosen, DEFAULT_SHIFT),
        {"sinusoidal": residuals_by_shift(sinusoid), "model": residuals_by_shift(model_table)},
        relative_bias_tables(biases[0] if biases else None, 0))
