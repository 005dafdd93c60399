"""What a model attended to, returned by `forward(..., trace=True)`.

Tracing is opt-in: without it no weights are materialised and the fused
`F.scaled_dot_product_attention` path is used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

ATTENTION_KINDS = ("encoder", "decoder", "cross")


@dataclass
class AttentionMap:
    kind: str  # "encoder" (self), "decoder" (masked self) or "cross"; RNN alignment counts as "cross"
    layer: int
    weights: Tensor  # (B, H, Tq, Tk); an RNN alignment has H == 1


@dataclass
class Trace:
    attention: list[AttentionMap] = field(default_factory=list)
    # name -> per-step hidden states, each (B, hidden), still in the autograd graph, so
    # torch.autograd.grad(loss, trace.hidden[name]) gives dL/dh_t for every t.
    # RNN names: "encoder.l{k}", "encoder.l{k}_reverse", "decoder.l{k}", "lm.l{k}".
    # Transformer names: "encoder.layer{k}", "decoder.layer{k}" hold each block's output (B, T, D)
    # as a one-element list, for gradient norm per layer (depth).
    hidden: dict[str, list[Tensor]] = field(default_factory=dict)
    cell: dict[str, list[Tensor]] = field(default_factory=dict)  # LSTM cell states, same naming
    # name -> gate name -> per-step activations (B, hidden): LSTM i,f,g,o; GRU r,z,n; UGRNN u,s
    gates: dict[str, dict[str, list[Tensor]]] = field(default_factory=dict)

    def attention_of(self, kind: str) -> list[AttentionMap]:
        return [m for m in self.attention if m.kind == kind]
