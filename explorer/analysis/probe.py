"""The probe: run one input through a model with tracing and return what the panels draw.

`probe(workspace, source, target, step)` works for every family: it runs `forward(..., trace=True)`
on a batch of one, turns each attention map into an `AttentionSnapshot` with token labels, and
back-propagates the teacher-forced loss to every traced hidden state:

* RNNs: ||dL/dh_t|| for every time step t of every layer (vanishing / exploding through time);
* Transformers: ||dL/d(block output)|| for every block, bottom to top (gradient through depth);
* every model: ||dL/dθ|| over each layer's parameters (explorer.analysis.param_gradients).

Each family names how its text becomes model inputs (`encode_pair`, `encode_next_token`,
`encode_masked`) in explorer.families.

Gradients are taken with `torch.autograd.grad`, so the parameters' `.grad` (the trainer's) is never
touched, and the model is put back in the mode it was in. Everything returned is numpy.

`probe_stages` delivers the same in two stages, for a window that draws what is ready: the
attention maps of a forward pass without autograd first (which also records what the hidden
panel reads), then the gradient norms of a second, forward and backward pass.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from explorer.analysis.gradients import gradient_norms_by_name, gradients_of, hidden_groups, norms_of
from explorer.analysis.param_gradients import group_norms, trainable_parameters
from explorer.data.batching import IGNORE_INDEX
from explorer.events import AttentionSnapshot, ProbeSnapshot
from explorer.families import Family, families, family_of
from explorer.readers import reading
from seqmodels.cells import cell_names
from seqmodels.config import BOS_ID, EOS_ID, make_config

# Panels probe from worker threads; one probe at a time, so no probe sees another's model.eval()
# half-undone (each puts back the train/eval mode it found).
_PROBE_LOCK = threading.Lock()


@dataclass
class Encoded:
    """The probe input as model tensors plus the label of every position."""

    inputs: tuple  # positional arguments of model.forward
    targets: torch.Tensor  # (1, T) ids the loss predicts
    labels: dict[str, list[str]]  # "source", "target_in", "target_out" or "tokens" -> tokens


def _tokens(tokenizer, ids: list[int]) -> list[str]:
    return [str(t) for t in tokenizer.tokens(ids)]


def encode_pair(workspace, source: str, target: str) -> Encoded:
    """Encoder-decoders: the source, and the target teacher-forced (`[<bos>] + target` in,
    `target + [<eos>]` out), each cut to the model's longest sequence."""
    config = workspace.model.config
    src_tokenizer = workspace.src_tokenizer or workspace.tokenizer
    limit = family_of(config).max_len(config)
    src = (src_tokenizer.encode(source) + [EOS_ID])[:limit]
    tgt = workspace.tokenizer.encode(target)
    tgt_in, tgt_out = ([BOS_ID] + tgt)[:limit], (tgt + [EOS_ID])[:limit]
    return Encoded(
        inputs=(torch.tensor([src]), torch.tensor([tgt_in])),
        targets=torch.tensor([tgt_out]),
        labels={
            "source": _tokens(src_tokenizer, src),
            "target_in": _tokens(workspace.tokenizer, tgt_in),
            "target_out": _tokens(workspace.tokenizer, tgt_out),
        },
    )


def encode_masked(workspace, source: str, target: str) -> Encoded:
    """Masked LMs: every position predicts its own token, a loss that sends gradients down every
    block. The text is `source`, or `target` when source is empty."""
    config = workspace.model.config
    ids = workspace.tokenizer.encode(source or target)
    limit = family_of(config).max_len(config)
    ids = ids[:limit] if limit else ids
    if not ids:
        raise ValueError("the probe text is empty")
    tokens = torch.tensor([ids])
    return Encoded((tokens,), tokens, {"tokens": _tokens(workspace.tokenizer, ids)})


def encode_next_token(workspace, source: str, target: str) -> Encoded:
    """Language models: predict token t+1 from tokens up to t, as in training. Every token typed
    is read (its h_t is shown); the last one has no next token to predict (IGNORE_INDEX)."""
    config = workspace.model.config
    ids = workspace.tokenizer.encode(source or target)
    limit = family_of(config).max_len(config)
    ids = ids[:limit] if limit else ids
    if len(ids) < 2:
        raise ValueError("the probe text needs at least two tokens for a language model")
    return Encoded(
        (torch.tensor([ids]),),
        torch.tensor([ids[1:] + [IGNORE_INDEX]]),
        {"tokens": _tokens(workspace.tokenizer, ids)},
    )


def _attention_labels(kind: str, labels: dict[str, list[str]]):
    """(query labels, key labels) of one attention kind. Cross-attention rows are labelled with the
    token the decoder produces at that position, as in the alignment figures of the papers."""
    if "tokens" in labels:
        return labels["tokens"], labels["tokens"]
    if kind == "encoder":
        return labels["source"], labels["source"]
    if kind == "decoder":
        return labels["target_in"], labels["target_in"]
    return labels["target_out"], labels["source"]


def _time_labels(name: str, labels: dict[str, list[str]]) -> list[str]:
    if "tokens" in labels:
        return labels["tokens"]
    return labels["source"] if name.startswith("encoder") else labels["target_in"]


def encode_probe_input(workspace, source: str, target: str) -> Encoded:
    """The family's probe encoding of (source, target); text longer than the model reads is a
    one-line UserError before it is tokenized or run (explorer.decoding.limits)."""
    from explorer.decoding.limits import check_ids, check_text

    model = workspace.model
    check_text(model, source, "the probe source" if target else "the probe text")
    check_text(model, target, "the probe target")
    encoded = family_of(model).encode_probe(workspace, source, target)
    for name, labels in encoded.labels.items():  # families with positions cut to them already
        check_ids(model, labels, f"the probe's {name.replace('_', ' ')}")
    return encoded


def probe(workspace, source: str, target: str = "", step: int = 0, live=None) -> ProbeSnapshot:
    """Attention maps, gradient norms and hidden states of `workspace.model` on one (source,
    target) pair: `probe_stages` run to its end.

    Language models (`rnn-lm`, `gpt`, `bert`) read `source` (or `target` when source is empty).
    """
    stages = probe_stages(workspace, source, target, step, live)
    while True:
        try:
            next(stages)
        except StopIteration as finished:
            return finished.value


def probe_stages(workspace, source: str, target: str = "", step: int = 0, live=None):
    """The probe in two stages, for a window that draws what is ready first: yields a snapshot
    with the attention maps only, from one forward pass without autograd, then returns the
    complete one (the same maps, the gradient norms of a forward and backward pass, and the hidden
    states the first pass recorded). The model is held from the first stage to the last: run the
    generator to its end (or close it) at once. `live`: panel id -> its live function
    (explorer/panel_registry.py), run on the same weights for the complete snapshot's `live`."""
    encoded = encode_probe_input(workspace, source, target)
    with _PROBE_LOCK, reading(workspace.model):  # whole weights, even while training runs
        return (yield from _probe_locked(workspace, encoded, source, target, step, live or {}))


def _probe_locked(workspace, encoded: Encoded, source: str, target: str, step: int, live: dict):
    from explorer.analysis.hidden import snapshot_from_trace, traced_pass  # it imports this module

    model = workspace.model  # in eval mode, under `reading`: no dropout, the model's own output
    device = next(model.parameters()).device
    inputs = tuple(t.to(device) for t in encoded.inputs)
    with torch.no_grad():
        trace, residuals = traced_pass(model, inputs)
    attention_only = ProbeSnapshot(step=step, source=source, target=target,
                                   attention=_attention_snapshots(trace, encoded.labels))
    yield attention_only
    # a copy, not the snapshot just handed over: another thread reads that one now
    snapshot = dataclasses.replace(attention_only)
    _gradient_norms(model, encoded, inputs, snapshot)
    snapshot.hidden = snapshot_from_trace(workspace, encoded, trace, residuals, source, target, step)
    with torch.no_grad():
        snapshot.live = {panel: function(model, encoded, step) for panel, function in live.items()}
    return snapshot


def _attention_snapshots(trace, labels: dict[str, list[str]]) -> list[AttentionSnapshot]:
    snapshots = []
    for attention in trace.attention:
        rows, cols = _attention_labels(attention.kind, labels)
        weights = attention.weights[0].detach().float().cpu().numpy().copy()  # (H, Tq, Tk)
        snapshots.append(AttentionSnapshot(attention.kind, attention.layer, weights, list(rows), list(cols)))
    return snapshots


def _gradient_norms(model, encoded: Encoded, inputs: tuple, snapshot: ProbeSnapshot) -> None:
    """The gradient fields of `snapshot`, from a forward and one backward pass of the
    teacher-forced loss, for the hidden states and the parameters together (the traced states must
    be in the autograd graph, so the first, gradient-free pass cannot serve)."""
    with torch.enable_grad():
        output = model(*inputs, trace=True)
        logits, trace = output[0], output[-1]  # rnn-lm may put its state in between
        targets = encoded.targets.to(logits.device)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)
        recurrent = family_of(model).recurrent
        hidden = hidden_groups(trace.hidden, per_layer=not recurrent)
        named = trainable_parameters(model)
        *hidden_grads, param_grads = gradients_of(loss, [*hidden.values(), [p for _, p in named]])
    if recurrent:
        # through time: the positions a loss reads (an LM's last token predicts nothing)
        read = slice(None, -1) if int(encoded.targets[0, -1]) == IGNORE_INDEX else slice(None)
        snapshot.grad_time = {name: norms_of(grads)[read] for name, grads in zip(hidden, hidden_grads)}
        snapshot.grad_time_labels = {
            name: _time_labels(name, encoded.labels)[read] for name in snapshot.grad_time
        }
    else:
        snapshot.grad_depth = norms_of([grads[0] for grads in hidden_grads])
        snapshot.grad_depth_labels = list(hidden)
    snapshot.grad_params_labels, snapshot.grad_params = group_norms(
        [name for name, _ in named], param_grads)


def make_probe_fn(workspace, probe_input):
    """A `Trainer.probe_fn`: probe `workspace` on whatever `probe_input.text` (a (source, target)
    tuple, e.g. the attention panel's `ProbeInput`) holds at call time, and, when the attribution view asks
    (`probe_input.explanation`), its attribution every few seconds (explorer.analysis.explain).
    The panels in sight get what their live functions return (`probe_input.live`).
    A probe input the model cannot read (e.g. an LM text of one token) is skipped, not fatal."""

    from explorer.analysis.explain import LiveSchedule

    live_explanation = LiveSchedule()

    def probe_fn(model, step: int) -> ProbeSnapshot | None:
        source, target = probe_input.text
        if not (source or target):
            return None
        try:
            snapshot = probe(workspace, source, target, step, getattr(probe_input, "live", None))
        except ValueError:
            return None
        snapshot.explanation = live_explanation(workspace, probe_input, source, target)
        return snapshot

    return probe_fn


def cell_comparison_family() -> Family:
    """The family "Compare cells" builds its models of: the first recurrent language model whose
    config picks its cell (the registry's `cell_field`: rnn-lm)."""
    return next(family for family in families().values()
                if family.is_lm and family.recurrent and family.cell_field)


def own_cell(model) -> dict:
    """{cell name: model} when `model` is of the family the comparison builds, so the trained
    model joins as its own cell; else {}."""
    family = family_of(model)
    return {getattr(model.config, family.cell_field): model} if family is cell_comparison_family() else {}


def compare_cells(
    token_ids: list[int],
    vocab_size: int,
    hidden_size: int = 32,
    cells: tuple[str, ...] | None = None,
    seed: int = 0,
    trained: dict | None = None,
) -> dict[str, np.ndarray]:
    """||dl_T/dh_t|| for every t: how much the loss at the last step reaches back to each earlier
    hidden state, for RNN language models of every cell type with the same size and data, so the
    plain RNN's vanishing can be set beside the gated cells. Fresh weights, except for cells in
    `trained` (cell name -> an already trained model, `own_cell`). `cells`: every registered one
    (seqmodels.cells) unless given."""
    from seqmodels import build_model

    family = cell_comparison_family()
    first_layer = f"{family.lm_stack}.l0"
    inputs = torch.tensor([token_ids[:-1]])  # (1, T)
    targets = torch.tensor([token_ids[1:]])
    curves = {}
    for cell in cells or cell_names():
        if trained and cell in trained:
            model = trained[cell]
        else:
            torch.manual_seed(seed)
            config = make_config(
                family.name, vocab_size=vocab_size, embed_dim=hidden_size,
                hidden_size=hidden_size, num_layers=1, **{family.cell_field: cell},
            )
            model = build_model(config)
        with torch.enable_grad():
            output = model(inputs, trace=True)
            logits, trace = output[0], output[-1]
            loss = F.cross_entropy(logits[:, -1], targets[:, -1])  # the last step's loss only
            hidden = {first_layer: trace.hidden[first_layer]}
            curves[cell] = gradient_norms_by_name(hidden, loss)[first_layer]
    return curves
