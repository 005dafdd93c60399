"""Attention rollout (Abnar & Zuidema, 2020): how much each input token reaches each position
through a stack of residual self-attention layers.

Per layer, the heads are fused (mean, max or min), the residual connection is added as the
identity and the rows are renormalised: Â_l = norm(A_l + I). The layers are multiplied bottom to
top: R = Â_L ... Â_1. An encoder-decoder's decoder also reads the source through cross-attention:
with the same assumption (a residual sublayer mixes its input and its attention's output half and
half), after each decoder layer's self-attention

    R_tt <- Â_l R_tt,  R_ts <- Â_l R_ts,  then  R_ts <- (R_ts + norm(C_l) R_enc) / 2,  R_tt <- R_tt / 2

from R_tt = I, R_ts = 0, where R_enc is the encoder's rollout and C_l the fused cross-attention;
[R_ts | R_tt] is the decoder's path back to the source and its own prefix (rows sum to 1).

Undefined for RNNs: their attention is one alignment over the encoder states, not a stack of
residual self-attention; `rollout` then returns no maps and the reason in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.analysis.attribution_input import attribution_input
from explorer.errors import UserError
from explorer.families import family_of

FUSIONS = ("mean", "max", "min")
RNN_REASON = ("attention rollout is not defined for an RNN: its attention is one alignment over the "
              "encoder states, not a stack of residual self-attention layers")


@dataclass
class RolloutMap:
    name: str  # "encoder", "decoder" or "decoder → source"
    rows: list[str]  # queries: the tokens of the stack (a decoder's rows: what each position produces)
    columns: list[str]
    matrix: np.ndarray  # (rows, columns), each row sums to 1


@dataclass
class RolloutResult:
    fusion: str
    maps: list[RolloutMap] = field(default_factory=list)
    reason: str | None = None  # why there is nothing to draw
    method: str = "rollout"  # or "flow" (explorer.analysis.attention_flow)
    note: str | None = None  # a map the method does not define, in one line

    def to_dict(self) -> dict:
        return {"method": self.method, "fusion": self.fusion, "reason": self.reason, "note": self.note,
                "maps": [{"name": m.name, "rows": m.rows, "columns": m.columns,
                          "matrix": m.matrix.tolist()} for m in self.maps]}


def fuse(weights: np.ndarray, fusion: str) -> np.ndarray:
    """(H, Tq, Tk) -> (Tq, Tk) by the mean, max or min over heads."""
    return {"mean": np.mean, "max": np.max, "min": np.min}[fusion](weights, axis=0)


def _normalise(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(matrix.sum(-1, keepdims=True), 1e-12)


def residual_attention(weights: np.ndarray, fusion: str = "mean") -> np.ndarray:
    """Â = norm(fuse(A) + I): one layer's (H, T, T) heads fused, the residual added, rows renormalised."""
    return _normalise(fuse(weights, fusion) + np.eye(weights.shape[-1]))


def rollout_stack(layers: list[np.ndarray], fusion: str = "mean") -> np.ndarray:
    """Rollout of one stack of self-attention layers, each (H, T, T), bottom first."""
    size = layers[0].shape[-1]
    result = np.eye(size)
    for weights in layers:
        result = residual_attention(weights, fusion) @ result
    return result


def rollout_to_source(self_layers: list[np.ndarray], cross_layers: list[np.ndarray],
                      encoder: np.ndarray, fusion: str = "mean") -> np.ndarray:
    """The decoder's rollout over [source | prefix]: (T, S + T), rows sum to 1."""
    size = self_layers[0].shape[-1]
    to_prefix, to_source = np.eye(size), np.zeros((size, encoder.shape[0]))
    for self_weights, cross_weights in zip(self_layers, cross_layers):
        mixed = residual_attention(self_weights, fusion)
        to_prefix, to_source = mixed @ to_prefix, mixed @ to_source
        cross = _normalise(fuse(cross_weights, fusion))
        to_source = 0.5 * (to_source + cross @ encoder)
        to_prefix = 0.5 * to_prefix
    return np.concatenate([to_source, to_prefix], axis=1)


@dataclass
class AttentionStacks:
    """One example's attention weights per stack, (H, T, T) per layer bottom first, and labels."""

    layers: dict[str, list[np.ndarray]]  # "encoder", "decoder" (self) and "cross"
    encoder_tokens: list[str]
    prefix: list[str]
    decoder_rows: list[str]  # what each decoder position produces (its maps' rows)
    source: list[str]


def attention_stacks(workspace, source: str, target: str = "") -> AttentionStacks:
    """The traced attention of every stack on one example (the model's mode restored)."""
    model = workspace.model
    item = attribution_input(workspace, source, target)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            output = model(*[t.to(next(model.parameters()).device) for t in item.inputs], trace=True)
    finally:
        model.train(was_training)
    trace = output[-1]
    layers = {kind: [m.weights[0].float().cpu().numpy() for m in sorted(trace.attention_of(kind),
                                                                          key=lambda m: m.layer)]
              for kind in ("encoder", "decoder", "cross")}
    labels = {side.name: side.labels for side in item.sides}
    produced = _produced_labels(workspace, item)
    prefix = labels.get("prefix", [])
    return AttentionStacks(layers, labels.get("source") or labels.get("tokens") or prefix, prefix,
                           produced if len(produced) == len(prefix) else prefix, labels.get("source", []))


def check_fusion(fusion: str) -> None:
    if fusion not in FUSIONS:
        raise UserError(f"unknown head fusion {fusion!r}; choose one of {', '.join(FUSIONS)}")


def rollout(workspace, source: str, target: str = "", fusion: str = "mean") -> RolloutResult:
    """Rollout of every self-attention stack of one example, and a decoder's path to the source."""
    check_fusion(fusion)
    if family_of(workspace.model).recurrent:
        return RolloutResult(fusion, reason=RNN_REASON)
    stacks = attention_stacks(workspace, source, target)
    layers = stacks.layers
    result = RolloutResult(fusion)
    encoder = None
    if layers["encoder"]:
        encoder = rollout_stack(layers["encoder"], fusion)
        result.maps.append(RolloutMap("encoder", stacks.encoder_tokens, stacks.encoder_tokens, encoder))
    if layers["decoder"]:
        rows, prefix = stacks.decoder_rows, stacks.prefix
        result.maps.append(RolloutMap("decoder", rows, prefix, rollout_stack(layers["decoder"], fusion)))
        if layers["cross"] and encoder is not None:
            matrix = rollout_to_source(layers["decoder"], layers["cross"], encoder, fusion)
            result.maps.append(RolloutMap("decoder → source", rows, stacks.source + prefix, matrix))
    if not result.maps:
        result.reason = "this model reports no self-attention to roll out"
    return result


def _produced_labels(workspace, item) -> list[str]:
    """What each decoder position produces (the rows of a decoder's maps)."""
    if family_of(workspace.model).masked_lm:
        return []
    return [row.label for row in item.rows]
