"""Attention flow (Abnar & Zuidema, 2020), beside rollout: the attention graph of a stack of
residual self-attention layers as a flow network, and how much can flow from each position at
the top to each input token.

Nodes are (layer, position) for layers 0 (the input tokens) to L; node (l + 1, i) has an edge to
(l, j) whose capacity is Â_l[i, j], the layer's head-fused attention with the residual identity
added and its rows renormalised (rollout's Â). Entry (i, j) of a stack's map is the maximum flow
from (L, i) to (0, j), and each row is divided by its sum, as the paper's code does. With one layer
the only path is the edge itself, so a row is Â's row.

Rollout multiplies the layers (the paths' products); flow takes the bottleneck of the paths, so
it cannot count one edge twice. It is defined on one stack of self-attention: an encoder-decoder's
path to the source mixes two stacks through cross-attention, which the paper does not model
(`CROSS_NOTE`; rollout draws it). Undefined for RNNs as rollout is.

Every (i, j) is one max-flow (networkx's preflow-push, an optional dependency: one line without
it), so a stack costs T² flows over a graph of (L + 1)·T nodes and L·T² edges: at most
MAX_TOKENS tokens, run in the job runner with progress and Stop.
"""

from __future__ import annotations

import numpy as np

from explorer.analysis.attribution import Cancelled
from explorer.analysis.rollout import (
    RNN_REASON,
    RolloutMap,
    RolloutResult,
    attention_stacks,
    check_fusion,
    residual_attention,
)
from explorer.errors import UserError
from explorer.families import family_of

MAX_TOKENS = 32
CROSS_NOTE = ("attention flow is defined on one stack of self-attention: the decoder's path to the "
              "source through cross-attention is drawn by rollout only")
MISSING = "attention flow needs networkx: pip install networkx (or use rollout)"


def flow_stack(layers: list[np.ndarray], fusion: str = "mean", progress=None, should_stop=None) -> np.ndarray:
    """(T, T) attention flow of one stack of self-attention layers, each (H, T, T), bottom first:
    row i the max-flow from the top position i to each input token, normalised to sum 1."""
    try:
        import networkx as nx
        from networkx.algorithms.flow import build_residual_network, preflow_push
    except ImportError:
        raise UserError(MISSING) from None
    size, depth = layers[0].shape[-1], len(layers)
    graph = nx.DiGraph()
    for layer, weights in enumerate(layers):
        capacity = residual_attention(weights, fusion)  # (T, T): row i of layer + 1 reads column j
        for i, j in zip(*np.nonzero(capacity)):  # a masked (zero) edge carries nothing: left out
            graph.add_edge((layer + 1, int(i)), (layer, int(j)), capacity=float(capacity[i, j]))
    residual = build_residual_network(graph, "capacity")  # built once; each flow resets it
    flows = np.zeros((size, size))
    for i in range(size):
        if should_stop is not None and should_stop():
            raise Cancelled("attention flow stopped")
        for j in range(size):
            flows[i, j] = preflow_push(graph, (depth, i), (0, j), residual=residual,
                                       value_only=True).graph["flow_value"]
        if progress is not None:
            progress((i + 1) / size)
    return flows / np.maximum(flows.sum(-1, keepdims=True), 1e-12)


def attention_flow(workspace, source: str, target: str = "", fusion: str = "mean", progress=None,
                   should_stop=None) -> RolloutResult:
    """Attention flow of every self-attention stack of one example (RolloutResult, method "flow")."""
    check_fusion(fusion)
    if family_of(workspace.model).recurrent:
        return RolloutResult(fusion, reason=RNN_REASON.replace("attention rollout", "attention flow"),
                             method="flow")
    stacks = attention_stacks(workspace, source, target)
    wanted = [(name, stacks.layers[name]) for name in ("encoder", "decoder") if stacks.layers[name]]
    longest = max((layers[0].shape[-1] for _, layers in wanted), default=0)
    if longest > MAX_TOKENS:
        raise UserError(f"attention flow runs one max-flow per pair of tokens: at most {MAX_TOKENS} "
                        f"tokens (this input has {longest}); shorten it or use rollout")
    result = RolloutResult(fusion, method="flow", note=CROSS_NOTE if stacks.layers["cross"] else None)
    for done, (name, layers) in enumerate(wanted):
        def part(fraction, done=done):  # each stack's share of the progress
            if progress is not None:
                progress((done + fraction) / len(wanted))

        matrix = flow_stack(layers, fusion, part, should_stop)
        rows, columns = ((stacks.encoder_tokens, stacks.encoder_tokens) if name == "encoder"
                         else (stacks.decoder_rows, stacks.prefix))
        result.maps.append(RolloutMap(name, rows, columns, matrix))
    if not result.maps:
        result.reason = "this model reports no self-attention to compute the flow of"
    return result
