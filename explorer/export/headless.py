"""`explorer export --format csv` without Qt: the tables a panel would export, computed from
what the panel would be shown. A panel's registry entry (explorer/panel_registry.py) names its
function here in `tables`; each takes a `HeadlessInput` and calls the same table function as the
panel's own `tables()` (explorer/export/*.py), so both write the same files. A panel with nothing
to draw for the model gets no tables (the command skips it with a note, as it skips the panel).
A `Document` among the tables is JSON written beside them (what a panel's `documents()` is)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from explorer.export.tables import Table


@dataclass
class Document:
    """JSON-ready data written as `<panel>_<name>.json` beside the CSVs."""

    data: object


def _as_a_panel_job(function, *args, **kwargs):
    """`function(*args)`, or None where it raises: a panel's job runner reports any failure in
    its status line and the panel draws nothing from it."""
    try:
        return function(*args, **kwargs)
    except Exception:  # noqa: BLE001  (as explorer/ui/jobs.py's runner)
        return None


@dataclass
class HeadlessInput:
    """What the app would show its panels: the workspace, the probe input (`--input`/`--target`;
    source None: the app's own default, a validation example) and the evaluation the app's BLEU
    panel shows first (an events.EvalMetrics, or None)."""

    workspace: object
    source: str | None = None
    target: str = ""
    evaluation: object = None

    @cached_property
    def probe_text(self) -> tuple[str, str]:
        from explorer.analysis.probe_input import default_probe_input

        return default_probe_input(self.workspace) if self.source is None else (self.source, self.target)

    @cached_property
    def probe(self):
        """The ProbeSnapshot every probing panel shows (the app's Prober's one probe), or None
        when the model cannot be probed on this input."""
        from explorer.analysis.probe import probe

        try:
            return probe(self.workspace, *self.probe_text, self.workspace.step)
        except ValueError:  # the Prober reports it and the panels stay empty
            return None


def curves_tables(given: HeadlessInput) -> dict[str, Table]:
    """The curves panel's: the workspace's recorded history, with the app's evaluation."""
    from explorer.export.curves import curve_tables, eval_row, history_rows, upserted

    train, evals = history_rows(getattr(given.workspace, "history", None))
    if given.evaluation is not None:
        evals = upserted(evals, eval_row(given.evaluation))
    return curve_tables(train, evals) if len(train) or len(evals) else {}  # none: nothing to draw


def attention_tables(given: HeadlessInput) -> dict[str, Table]:
    from explorer.export.probe_tables import attention_maps, attention_tables, first_attention_view

    maps = attention_maps(given.probe) if given.probe is not None else {}
    view = first_attention_view(maps)
    return attention_tables(maps, *view) if view else {}


def _hidden(given: HeadlessInput, shows_gates: bool) -> dict[str, Table]:
    from explorer.export.probe_tables import hidden_tables

    hidden = getattr(given.probe, "hidden", None)
    if hidden is None or (shows_gates and not hidden.gate_names()):
        return {}
    return hidden_tables(hidden, shows_gates)


def hidden_panel_tables(given: HeadlessInput) -> dict[str, Table]:
    return _hidden(given, shows_gates=False)


def gates_tables(given: HeadlessInput) -> dict[str, Table]:
    return _hidden(given, shows_gates=True)


def bleu_panel_tables(given: HeadlessInput) -> dict[str, Table]:
    from explorer.export.bleu import bleu_history, bleu_tables, with_evaluation

    rows = bleu_history(getattr(given.workspace, "history", None))
    metrics, breakdown = given.evaluation, None
    if metrics is not None and metrics.bleu is not None:  # what the panel's add_eval shows
        updated = with_evaluation(rows, metrics)
        rows = rows if updated is None else updated
        breakdown = metrics.bleu_detail
    if not len(rows) and breakdown is None:
        return {}  # nothing to draw: a language model, or no evaluation with BLEU
    return bleu_tables(rows, breakdown)


def gradients_tables(given: HeadlessInput) -> dict[str, Table]:
    """The gradients panel's as it opens: the probe, the cells compared on the probe text (the
    workspace's own model joins as its cell), the clipping norms its history recorded, the
    playground at its first a_h, the history of this one probe."""
    from explorer.analysis.gradients import (
        CELL_HIDDEN, PLAYGROUND_A_H, GradientHistory, cell_comparison_ids, scalar_recurrence_gradient,
    )
    from explorer.analysis.probe import compare_cells, own_cell
    from explorer.export.gradients import GradientView, gradient_tables, param_gradients, recorded_norms

    snapshot, workspace = given.probe, given.workspace
    if snapshot is None:
        return {}
    source, target = given.probe_text
    hidden = getattr(workspace.model.config, "hidden_size", CELL_HIDDEN)
    cells = _as_a_panel_job(compare_cells, cell_comparison_ids(workspace.tokenizer, source or target),
                            workspace.tokenizer.vocab_size, hidden, trained=own_cell(workspace.model))
    history = GradientHistory()
    names = history.add(snapshot)
    a_h = PLAYGROUND_A_H[2]
    view = GradientView(params=param_gradients(snapshot),
                        playground=(a_h, False, scalar_recurrence_gradient(a_h, use_tanh=False)),
                        history=history, layer=names[0] if names else None, cells=cells or {},
                        clipping=recorded_norms(getattr(workspace, "history", None)),
                        clip=getattr(workspace.train_config, "clip", None))
    return gradient_tables(snapshot, view)


def embeddings_tables(given: HeadlessInput) -> dict[str, Table]:
    """The embeddings panel's as it opens: the first embedding the model has, projected; no
    token picked."""
    from explorer.analysis.embeddings import available_embeddings, embedding_data, embedding_tables

    kinds = available_embeddings(given.workspace.model)
    data = _as_a_panel_job(embedding_data, given.workspace, kinds[0]) if kinds else None
    return {} if data is None else embedding_tables(data)


def beam_tables(given: HeadlessInput) -> dict[str, Table | Document]:
    """The beam panel's: the probe's source decoded (the panel follows the probe input) with the
    default settings, pruned nodes shown; and the whole tree as JSON."""
    from explorer.analysis.beam_tree import BeamTreeIndex, drawn_tables, visible_layout
    from explorer.decoding.jobs import run_beam_search
    from explorer.decoding.settings import DecodeSettings

    result = _as_a_panel_job(run_beam_search, given.workspace, given.probe_text[0], DecodeSettings())
    if result is None or len(result.nodes) < 2:
        return {}
    tree = BeamTreeIndex(result)
    index, layout = visible_layout(tree, show_pruned=True)
    return {**drawn_tables(result, tree, tree.ids[index], layout),
            "tree": Document(result.to_dict(include_attention=True))}


def positional_panel_tables(given: HeadlessInput) -> dict[str, Table]:
    """The positional panel's as it opens on the model (explorer/export/positional.py)."""
    from explorer.export.positional import opening_view, positional_tables

    return positional_tables(opening_view(given.workspace.model))


def _explained(given: HeadlessInput, method: str) -> dict[str, Table | Document]:
    """What the attribution panel (or its rollout view) computes as it opens: the probe input
    explained by `method` with the panel's default settings, every output token; its result as
    JSON beside the tables (the panel's documents())."""
    from explorer.analysis.explain import ExplainRequest, explain
    from explorer.export.attribution import attribution_tables

    result = _as_a_panel_job(explain, given.workspace, *given.probe_text, ExplainRequest(method))
    tables = attribution_tables(result)
    return {**tables, "result": Document(result.to_dict())} if tables else {}


def attribution_panel_tables(given: HeadlessInput) -> dict[str, Table | Document]:
    return _explained(given, "ig")  # AttributionPanel.DEFAULT_METHOD


def rollout_tables(given: HeadlessInput) -> dict[str, Table | Document]:
    return _explained(given, "rollout")  # RolloutPanel.DEFAULT_METHOD


def compare_panel_tables(given: HeadlessInput) -> dict[str, Table]:
    """The compare panel's: `--input` (no reference) or, as it opens, the first validation pair,
    decoded with the default settings."""
    from explorer.decoding.jobs import run_compare
    from explorer.decoding.settings import DecodeSettings
    from explorer.export.compare import compare_tables, opening_pair

    pair = (given.source, "") if given.source is not None else opening_pair(given.workspace)
    text, reference = pair if pair is not None else ("", "")  # the panel's empty boxes
    return compare_tables(_as_a_panel_job(run_compare, given.workspace, text, reference,
                                          DecodeSettings()) or [])


def architecture_tables(given: HeadlessInput) -> dict[str, Table]:
    """The diagram panel's: the model traced on the probe input, every module call."""
    from explorer.analysis.architecture import (
        call_tables,
        layout_blocks,
        trace_workspace,
    )

    trace = _as_a_panel_job(trace_workspace, given.workspace, *given.probe_text)
    return {} if trace is None or not layout_blocks(trace) else call_tables(trace)


def runs_tables(given: HeadlessInput) -> dict[str, Table]:
    """The Compare runs panel's: no run folder added, so the open model's own run ("this
    window": its history, with the app's evaluation), its loss (or first recorded metric)."""
    from explorer.runs.compare import (
        THIS_WINDOW,
        RunCurves,
        curves_from_rows,
        eval_record,
        first_metric,
        metric_series,
        metric_table,
    )

    rows = list(getattr(given.workspace, "history", None) or [])
    if given.evaluation is not None:
        rows.append(eval_record(given.evaluation))
    runs = [RunCurves(THIS_WINDOW, "", metric_series(curves_from_rows(rows)))] if rows else []
    metric = first_metric(runs)
    return {metric: metric_table(runs, metric)} if metric is not None else {}
