"""Inside the layers: hidden states, cell states and gates over a probe text, as plain numpy data.

`hidden_snapshot(workspace, source, target)` runs the model once with `trace=True` (as
`explorer.analysis.probe` does) and returns a `HiddenSnapshot`:

* recurrent models (`rnn-lm`, `seq2seq`): one `RecurrentLayer` per stream, layer and direction with
  h_t (units x time steps), the LSTM cell state c_t, and every gate as its own matrix
  (LSTM i, f, g, o; GRU r, z, n; UGRNN u, s), the tokens on the time axis;
* Transformers (`transformer`, `gpt`, `bert`, Hugging Face models): one `TransformerStack` per
  stack (encoder, decoder) with the residual stream's norm per layer and position, each block's
  output (d_model x positions), and for the decoder side the logit lens
  (`explorer.analysis.logit_lens`). The residual stream is read by name
  (`{stack}.hook_embed`, `{stack}.blocks.{k}.hook_resid_post`, explorer.analysis.activations), and
  the lens through the model's provider's `readout`, so no model kind is named here.

Every value is the model's own: the trace's tensors, detached and copied. Row labels name the layer
and unit as `l1:5` (layer 1, unit 5: layers count from 1 everywhere; `l1_reverse:5` for a
bidirectional encoder's backward half).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.analysis.activations import provider_for, recording
from explorer.analysis.labels import layer_label, unit_label
from explorer.analysis.logit_lens import LogitLens, lens_layers, summarize_lens
from explorer.analysis.probe import _PROBE_LOCK, encode_probe_input
from explorer.families import family_of
from explorer.readers import reading


@dataclass
class RecurrentLayer:
    """One layer and direction of a recurrent stack over one text."""

    name: str  # the trace's name: "lm.l0", "encoder.l1_reverse", "decoder.l0"
    stream: str  # "lm", "encoder" or "decoder"
    layer: int
    reverse: bool  # the backward half of a bidirectional layer (it reads right to left)
    tokens: list[str]  # the token at each time step, in text order
    hidden: np.ndarray  # (units, T): h_t
    cell: np.ndarray | None = None  # (units, T): c_t, LSTM only
    gates: dict[str, np.ndarray] = field(default_factory=dict)  # gate letter -> (units, T)

    @property
    def units(self) -> int:
        return self.hidden.shape[0]

    def row_labels(self) -> list[str]:
        return [unit_label(self.name, unit) for unit in range(self.units)]

    def quantities(self) -> list[str]:
        """What this layer can show: "h", then "c" for LSTMs, then its gates."""
        return ["h"] + (["c"] if self.cell is not None else []) + list(self.gates)

    def matrix(self, quantity: str) -> np.ndarray:
        if quantity == "h":
            return self.hidden
        if quantity == "c" and self.cell is not None:
            return self.cell
        if quantity in self.gates:
            return self.gates[quantity]
        raise KeyError(f"{self.name} has no {quantity!r}; it has {', '.join(self.quantities())}")


@dataclass
class TransformerStack:
    """One Transformer stack (encoder or decoder) over one text."""

    stream: str  # "encoder" or "decoder" (a GPT's only stack is its decoder, a BERT's its encoder)
    tokens: list[str]  # the token at each position
    layer_labels: list[str]  # "embed", "layer 1", "layer 2", ...: where the residual stream is read
    residual_norm: np.ndarray  # (layers + 1, T): ||x|| of the residual stream per layer and position
    block_outputs: list[np.ndarray]  # per block, (d_model, T): what the block hands on


@dataclass
class HiddenSnapshot:
    """What `hidden_snapshot` returns: plain data for the hidden/gates panel and for export."""

    family: str
    step: int
    source: str
    target: str
    layers: list[RecurrentLayer] = field(default_factory=list)
    stacks: list[TransformerStack] = field(default_factory=list)
    lens: LogitLens | None = None

    def streams(self) -> list[str]:
        names = [layer.stream for layer in self.layers] + [stack.stream for stack in self.stacks]
        return list(dict.fromkeys(names))

    def layers_of(self, stream: str) -> list[RecurrentLayer]:
        return [layer for layer in self.layers if layer.stream == stream]

    def gate_names(self) -> list[str]:
        return list(dict.fromkeys(g for layer in self.layers for g in layer.gates))


def _numpy_steps(steps: list[torch.Tensor]) -> np.ndarray:
    """Per-step (1, units) tensors of a batch of one -> (units, T) float32."""
    return torch.stack([s[0] for s in steps], dim=1).detach().float().cpu().numpy().copy()


def _stream_tokens(stream: str, labels: dict[str, list[str]]) -> list[str]:
    if "tokens" in labels:
        return labels["tokens"]
    return labels["source"] if stream == "encoder" else labels["target_in"]


def _recurrent_layers(trace, labels: dict[str, list[str]], reverse_source: bool) -> list[RecurrentLayer]:
    layers = []
    for name, steps in trace.hidden.items():
        stream, short = name.split(".", 1)
        tokens = list(_stream_tokens(stream, labels))
        if stream == "encoder" and reverse_source:
            tokens = tokens[::-1]  # the encoder read the source backwards (Sutskever's trick)
        layer = RecurrentLayer(
            name=name,
            stream=stream,
            layer=int(short[1:].split("_")[0]),
            reverse=short.endswith("_reverse"),
            tokens=tokens,
            hidden=_numpy_steps(steps),
            cell=_numpy_steps(trace.cell[name]) if name in trace.cell else None,
            gates={g: _numpy_steps(s) for g, s in trace.gates.get(name, {}).items()},
        )
        layers.append(layer)
    return layers


RESIDUAL_POINTS = ("*.hook_embed", "*.blocks.*.hook_resid_post")


def traced_pass(model, inputs: tuple):
    """One forward pass with trace=True that also records a Transformer's residual stream, all
    `snapshot_from_trace` needs -> (trace, the recorded points). No autograd unless enabled."""
    if family_of(model).recurrent:  # its trace holds every state the snapshot shows
        return model(*inputs, trace=True)[-1], {}
    with recording(model, RESIDUAL_POINTS) as residuals:
        trace = model(*inputs, trace=True)[-1]
    return trace, residuals


def _residual_streams(residuals: dict[str, torch.Tensor]) -> dict[str, list[torch.Tensor]]:
    """stack -> its residual stream [(1, T, D)]: the embedding, then after each block (before any
    final norm), from the points `traced_pass` recorded."""
    streams: dict[str, list[torch.Tensor]] = {}
    for name, value in residuals.items():  # in the order the pass reached them: embedding first
        streams.setdefault(name.split(".", 1)[0], []).append(value)
    return streams


def _transformer_stack(stream: str, residuals: list[torch.Tensor], labels: dict[str, list[str]]) -> TransformerStack:
    stream_x = torch.cat(residuals, dim=0)  # (layers + 1, T, D): batch of one per layer
    return TransformerStack(
        stream=stream,
        tokens=list(_stream_tokens(stream, labels)),
        layer_labels=["embed"] + [layer_label(k) for k in range(len(residuals) - 1)],
        residual_norm=stream_x.norm(dim=-1).detach().float().cpu().numpy().copy(),
        block_outputs=[x[0].T.detach().float().cpu().numpy().copy() for x in residuals[1:]],
    )


def hidden_snapshot(workspace, source: str, target: str = "", step: int = 0, lens: bool = True) -> HiddenSnapshot:
    """Hidden states, cell states and gates (RNNs) or the residual stream (Transformers) of
    `workspace.model` on one probe input. Language models read `source` (or `target`)."""
    encoded = encode_probe_input(workspace, source, target)
    model = workspace.model
    device = next(model.parameters()).device
    inputs = tuple(t.to(device) for t in encoded.inputs)
    with _PROBE_LOCK, reading(model):
        was_training = model.training
        model.eval()  # no dropout: show what the model computes
        try:
            with torch.no_grad():
                trace, residuals = traced_pass(model, inputs)
                return snapshot_from_trace(workspace, encoded, trace, residuals, source, target, step, lens)
        finally:
            model.train(was_training)


def snapshot_from_trace(workspace, encoded, trace, residuals: dict, source: str, target: str, step: int,
                        lens: bool = True) -> HiddenSnapshot:
    """The snapshot of a forward pass already made (`traced_pass`: its trace and residual points;
    the probe's, `explorer.analysis.probe`). `encoded` is the probe's encoding."""
    model = workspace.model
    family = family_of(model)
    snapshot = HiddenSnapshot(family=family.name, step=step, source=source, target=target)
    with torch.no_grad():
        if family.recurrent:
            reverse = bool(getattr(model.config, "reverse_source", False))
            snapshot.layers = _recurrent_layers(trace, encoded.labels, reverse)
        else:
            streams, readout = _residual_streams(residuals), provider_for(model).readout(model)
            snapshot.stacks = [_transformer_stack(name, x, encoded.labels) for name, x in streams.items()]
            if lens and readout is not None and "decoder" in streams:  # the side that predicts tokens
                snapshot.lens = summarize_lens(
                    lens_layers(readout, streams["decoder"]), snapshot.stacks[-1].tokens,
                    encoded.targets[0].tolist(), workspace.tokenizer,
                )
    return snapshot


def hidden_table(layers: list[RecurrentLayer], quantity: str = "h") -> tuple[list[str], list[list]]:
    """One row per layer and unit (label `l1:5`), one column per input token (the token as header):
    the model's own h_t (or c_t, or one gate). All `layers` must share their tokens (one stream)."""
    if not layers:
        raise ValueError("no recurrent layers to tabulate")
    tokens = layers[0].tokens
    header = ["unit", *tokens]
    rows = []
    for layer in layers:
        if layer.tokens != tokens:
            raise ValueError(f"{layer.name} reads other tokens than {layers[0].name}")
        values = layer.matrix(quantity)
        rows += [[label, *values[unit].tolist()] for unit, label in enumerate(layer.row_labels())]
    return header, rows
