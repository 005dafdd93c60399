"""The tables of the panels that show a probe (explorer.events.ProbeSnapshot), without Qt: the
attention panel's and the hidden/gates panels'. The panels' own CSV export and `explorer export
--format csv` (explorer/export/headless.py) both call these."""

from __future__ import annotations

from explorer.export.tables import Table, matrix_table

MEAN_OF_HEADS = -1  # the head choice that averages every head's map
ATTENTION_KINDS = ("encoder", "decoder", "cross")  # the order the kind menu lists them in


def attention_maps(snapshot) -> dict:
    """(kind, layer) -> AttentionSnapshot of a probe."""
    return {(m.kind, m.layer): m for m in snapshot.attention}


def first_attention_view(maps: dict) -> tuple[str, int, int] | None:
    """(kind, layer, head) a new model opens on: its alignment (target over source) when it has
    one, what the lectures draw first; layer 1; the mean of the heads when there are several."""
    if not maps:
        return None
    kinds = sorted({kind for kind, _ in maps}, key=list(ATTENTION_KINDS).index)
    kind = "cross" if "cross" in kinds else kinds[0]
    layer = min(layer for k, layer in maps if k == kind)
    return kind, layer, MEAN_OF_HEADS if maps[(kind, layer)].weights.shape[0] > 1 else 0


def attention_matrix(attention, head: int | None):
    """The (Tq, Tk) map shown: one head's, or the mean of the heads (rows still sum to 1)."""
    if head is None or head == MEAN_OF_HEADS:
        return attention.weights.mean(axis=0)
    return attention.weights[head]


def attention_tables(maps: dict, kind: str, layer: int, head: int | None) -> dict[str, Table]:
    """The map shown (`heatmap`) and every map of every layer and head (`all_maps`)."""
    attention = maps.get((kind, layer))
    if attention is None:
        return {}
    tables = {"heatmap": matrix_table(attention_matrix(attention, head), attention.rows,
                                      attention.cols, "query \\ key")}
    rows = []
    for (map_kind, map_layer), snap in sorted(maps.items()):
        for h in range(snap.weights.shape[0]):
            for q, query in enumerate(snap.rows):
                for k, key in enumerate(snap.cols):
                    # layers and heads numbered from 1, as every label of the app writes them
                    rows.append([map_kind, map_layer + 1, h + 1, q, query, k, key, snap.weights[h, q, k]])
    header = ["kind", "layer", "head", "query_index", "query", "key_index", "key", "weight"]
    tables["all_maps"] = (header, rows)
    return tables


def hidden_tables(snapshot, shows_gates: bool) -> dict[str, Table]:
    """A HiddenSnapshot's tables: each recurrent quantity per stream (h, c and the gates, or the
    gates alone), and (hidden panel) the residual-stream norms and the logit lens."""
    from explorer.analysis.hidden import hidden_table

    tables: dict[str, Table] = {}
    # the hidden panel's dock shows the gates too, so File > Export all writes them as gate_<g>
    names = {q: q for q in snapshot.gate_names()}
    if not shows_gates:
        names = {"h": "h", "c": "c", **{q: f"gate_{q}" for q in names}}
    for stream in snapshot.streams():
        layers = snapshot.layers_of(stream)
        suffix = "" if stream == "lm" or len(snapshot.streams()) == 1 else f"_{stream}"
        for q, name in names.items():
            if layers and q in layers[0].quantities():
                tables[f"{name}{suffix}"] = hidden_table(layers, q)
    if not shows_gates:
        for stack in snapshot.stacks:
            suffix = "" if len(snapshot.stacks) == 1 else f"_{stack.stream}"
            tables[f"residual_norm{suffix}"] = matrix_table(stack.residual_norm, stack.layer_labels,
                                                            stack.tokens, "layer")
        if snapshot.lens is not None:
            tables.update(snapshot.lens.tables())
    return tables
