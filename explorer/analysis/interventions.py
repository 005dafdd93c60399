"""Interventions on the named activation points (explorer.analysis.activations): ablate heads or
RNN units, rank heads by what ablating each alone costs (Michel et al., 2019), and activation
patching from a clean into a corrupted run (the TransformerLens workflow).

Every intervention is a `run_with(..., replace=...)` pass: the weights are never written, so
"undo" is the next plain forward pass, bit-identical to the one before.

    effect = ablation_effect(workspace, source, target, heads={"decoder.blocks.1.attn.hook_z": [0, 2]})
    importance = head_importance(workspace, source, target)       # (layers, heads) drop in log p
    patched = activation_patching(workspace, clean, corrupted)    # (layers, positions) recovered
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from explorer.analysis.activations import list_points, run_with
from explorer.analysis.attribution import cut_after_rows, output_at, output_layer
from explorer.analysis.labels import layer_label
from explorer.analysis.attribution_input import AttributionInput, attribution_input
from explorer.errors import UserError
from explorer.families import family_of

ABLATIONS = ("zero", "mean")
UNIT_KIND = "h"  # the RNN points whose units are ablated: the hidden states
_HEADS = re.compile(r"(.+)\.blocks\.(\d+)\.(attn|cross_attn)\.hook_z$")
_RESID = re.compile(r"(.+)\.blocks\.(\d+)\.hook_resid_pre$")


@dataclass
class AblationEffect:
    rows: list[str]  # output tokens
    clean: np.ndarray  # (R,) log p of each output token
    ablated: np.ndarray  # (R,)
    attention_change: dict[str, float] = field(default_factory=dict)  # pattern -> max |Δ weight|
    unit_points: dict[str, int] = field(default_factory=dict)  # RNN state point -> its units, to ablate


def point_label(name: str) -> str:
    """"decoder.blocks.1.cross_attn" -> "decoder layer 2 cross", numbered from 1 as the app does."""
    match = re.match(r"(.+)\.blocks\.(\d+)(?:\.(\w+))?$", name)
    if match is None:
        return name
    stack, layer, part = match.groups()
    return f"{stack} {layer_label(int(layer))}" + (" cross" if part == "cross_attn" else "")


def unit_point_label(name: str) -> str:
    """"encoder.rnn.l1.bwd.hook_h" -> "encoder layer 2 backward", as the hidden panel numbers layers."""
    match = re.match(r"(?:(.+)\.)?rnn\.l(\d+)\.(fwd|bwd)\.hook_h$", name)
    if match is None:
        return name
    stack, layer, direction = match.groups()
    return " ".join(filter(None, [stack, layer_label(int(layer)), "forward" if direction == "fwd" else "backward"]))


def parse_units(text: str, count: int) -> list[int]:
    """"3, 7, 10-12" -> [3, 7, 10, 11, 12]: units numbered from 0 below `count`; one line
    (UserError) for anything else."""
    units: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        bounds = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if bounds is None:
            raise UserError(f"{part!r} is not a unit or a range of units (e.g. 3, 7, 10-12)")
        first, last = int(bounds[1]), int(bounds[2] or bounds[1])
        if first > last:
            raise UserError(f"the range {part!r} runs backwards; write it low-high")
        if last >= count:
            raise UserError(f"unit {last} is out of range: this layer has units 0-{count - 1}")
        units.update(range(first, last + 1))
    return sorted(units)


def format_units(units: list[int]) -> str:
    """[3, 7, 10, 11, 12] -> "3, 7, 10-12": parse_units' inverse."""
    runs: list[list[int]] = []
    for unit in sorted(units):
        if runs and unit == runs[-1][1] + 1:
            runs[-1][1] = unit
        else:
            runs.append([unit, unit])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


@dataclass
class HeadImportance:
    layers: list[str]  # the z points' layers, e.g. "decoder.blocks.1.cross_attn" (point_label)
    heads: int
    drop: np.ndarray  # (L, H): log p(outputs) clean minus with that head ablated; NaN: no such head
    mode: str
    points: list[str] = field(default_factory=list)  # each layer's z point, for `ablate`
    quantity: str = "drop in log p"  # what `drop` measures (head_importance_data: loss, BLEU)


@dataclass
class PatchingResult:
    layers: list[str]  # the residual-stream points patched, bottom first
    positions: list[str]  # the patched stack's tokens
    recovered: np.ndarray  # (L, T): (patched - corrupted) / (clean - corrupted) logit difference
    answer: str  # the clean run's token at the explained position
    alternative: str  # the corrupted run's
    clean_difference: float
    corrupted_difference: float


def _model_inputs(model, item: AttributionInput, batch: int = 1) -> tuple:
    device = next(model.parameters()).device
    return tuple(t.to(device).expand(batch, -1) for t in item.inputs)


def _log_probs(logits: torch.Tensor, item: AttributionInput) -> torch.Tensor:
    """(B, R) log p of each output token."""
    logprobs = logits.float().log_softmax(-1)
    return torch.stack([logprobs[:, row.position, row.token_id] for row in item.rows], dim=1)


class _Eval:
    """No dropout while intervening; the model's mode restored afterwards."""

    def __init__(self, model) -> None:
        self.model = model

    def __enter__(self):
        self.was_training = self.model.training
        self.model.eval()

    def __exit__(self, *exc) -> None:
        self.model.train(self.was_training)


def head_means(model, items: list, names: list[str]) -> dict[str, torch.Tensor]:
    """Each point's value averaged over every position of the examples: a head point's (H, Dh), an
    RNN state's (units,). What 'mean' ablation puts in. `items`: anything with the model's
    `.inputs` (an AttributionInput, the probe's Encoded). Counted per point: an encoder's positions
    are the source's, a decoder's the target's."""
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, int] = {}
    with _Eval(model), torch.no_grad():
        for item in items:
            values = run_with(model, _model_inputs(model, item), read=names).values
            for name in names:
                value = values[name].flatten(0, 1)  # (B * T, ...)
                sums[name] = sums.get(name, 0) + value.double().sum(0)
                counts[name] = counts.get(name, 0) + value.shape[0]
    return {name: (total / max(counts[name], 1)).float() for name, total in sums.items()}


def _head_replacement(heads_by_row: list[list[int]], mean: torch.Tensor | None):
    """fn(z (B, T, H, Dh)): in batch row b the heads heads_by_row[b] are zeroed (or set to mean)."""

    def replace(z: torch.Tensor) -> torch.Tensor:
        z = z.clone()
        for b, heads in enumerate(heads_by_row):
            if heads:
                z[b, :, heads] = 0.0 if mean is None else mean[heads].to(z)
        return z

    return replace


def heads_replacement(heads: list[int], mean: torch.Tensor | None = None):
    """fn(z (B, T, H, Dh)): the heads zeroed (or set to their mean) in every batch row, for passes
    whose batch is the data's (an evaluation, a decode: a step's T is 1)."""

    def replace(z: torch.Tensor) -> torch.Tensor:
        z = z.clone()
        z[:, :, heads] = 0.0 if mean is None else mean[heads].to(z)
        return z

    return replace


def _unit_replacement(units: list[int], mean: torch.Tensor | None):
    def replace(h: torch.Tensor, step: int) -> torch.Tensor:  # one step of a recurrent state (B, H)
        h = h.clone()
        h[:, units] = 0.0 if mean is None else mean[units].to(h)
        return h

    return replace


def ablate(model, item: AttributionInput, heads: dict[str, list[int]] | None = None,
           units: dict[str, list[int]] | None = None, mode: str = "zero",
           means: dict[str, torch.Tensor] | None = None, read: list[str] = ()):
    """One pass with the heads (z point -> head indices) and RNN units (state point -> units)
    ablated: zeroed, or (mode "mean") set to `means[point]`. The model is untouched: the pass
    after it is the model as it was."""
    if mode not in ABLATIONS:
        raise UserError(f"unknown ablation {mode!r}; choose zero or mean")
    if mode == "mean" and means is None:
        raise UserError("mean ablation needs the points' mean values (head_means, validation_means)")
    def mean_of(name: str) -> torch.Tensor | None:
        return means[name] if mode == "mean" else None

    replace = {name: heads_replacement(list(chosen), mean_of(name)) for name, chosen in (heads or {}).items()}
    replace.update({name: _unit_replacement(list(chosen), mean_of(name)) for name, chosen in (units or {}).items()})
    with _Eval(model):
        return run_with(model, _model_inputs(model, item), read=list(read), replace=replace)


def ablation_effect(workspace, source: str, target: str = "", heads=None, units=None,
                    mode: str = "zero", means=None) -> AblationEffect:
    """The output tokens' log-probabilities and the attention maps, clean and ablated."""
    model = workspace.model
    item = attribution_input(workspace, source, target)
    points = list_points(model, _model_inputs(model, item))
    patterns = [p.name for p in points if p.name.endswith("hook_pattern") and not p.per_step]
    with _Eval(model):
        clean = run_with(model, _model_inputs(model, item), read=patterns)
    ablated = ablate(model, item, heads, units, mode, means, read=patterns)
    change = {name: float((ablated.values[name] - clean.values[name]).abs().max()) for name in patterns}
    return AblationEffect([row.label for row in item.rows], _log_probs(clean.logits, item)[0].numpy(),
                          _log_probs(ablated.logits, item)[0].numpy(), change,
                          {p.name: p.shape[-1] for p in points if p.kind == UNIT_KIND})


# Rows x positions one head-importance pass holds: its logits over a 50k vocabulary in ~200 MB.
_BATCH_TOKENS = 1024


def head_importance(workspace, source: str, target: str = "", mode: str = "zero",
                    means=None, progress=None) -> HeadImportance:
    """Drop in the summed log-probability of the output tokens when each head alone is ablated.
    A pass ablates a few consecutive layers, one batch row per head, beside a clean row 0 (the
    base each drop is taken from). A pass over the first stack the model runs starts at batch 1
    and grows at each ablated layer's residual stream (copies of the clean row): what lies below a
    head is computed once, and the layers above every ablated row once per row."""
    model = workspace.model
    item = attribution_input(workspace, source, target)
    points = list_points(model, _model_inputs(model, item))
    counts = {p.name: p.shape[2] for p in points if _HEADS.match(p.name)}  # z point -> heads
    names = list(counts)
    if not names:
        raise UserError(f"a {family_of(model).name} model has no attention heads to ablate")
    if mode == "mean" and means is None:
        means = head_means(model, [item], names)
    drop = np.full((len(names), max(counts.values())), np.nan)
    length = max(t.size(1) for t in item.inputs)
    done = 0
    with _Eval(model), torch.no_grad():
        for layers, grows in _ablation_passes(points, names, counts, _BATCH_TOKENS // length):
            log_p = _ablation_pass(model, item, layers, counts, grows,
                                   {name: None if mode == "zero" else means[name] for name in layers})
            offset = 1
            for name in layers:
                drop[names.index(name), :counts[name]] = (log_p[0] - log_p[offset: offset + counts[name]]).numpy()
                offset += counts[name]
            done += len(layers)
            if progress is not None:
                progress(done / len(names))
    return HeadImportance([point_label(name[: -len(".hook_z")]) for name in names], drop.shape[1], drop, mode,
                          names)


def _residual_of(name: str) -> str:
    """"decoder.blocks.1.attn.hook_z" -> "decoder.blocks.1.hook_resid_pre": that block's input."""
    stack, block = _HEADS.match(name).group(1, 2)
    return f"{stack}.blocks.{block}.hook_resid_pre"


def _ablation_passes(points, names: list[str], counts: dict[str, int], max_rows: int):
    """[(z points ablated in one pass, bottom first; whether it grows)]: consecutive layers while
    their rows fit `max_rows` (at least one layer a pass). Only the first stack the pass computes
    grows: a later one reads the earlier stacks' outputs (cross-attention), whose batch must
    match its own from the start."""
    residuals = {p.name for p in points if _RESID.match(p.name)}
    first_stack = next((m.group(1) for p in points if (m := _RESID.match(p.name))), None)
    passes: list[tuple[list[str], bool]] = []
    for name in names:
        grows = _HEADS.match(name).group(1) == first_stack and _residual_of(name) in residuals
        if passes and passes[-1][1] == grows and 1 + sum(counts[n] for n in passes[-1][0]) + counts[name] <= max_rows:
            passes[-1][0].append(name)
        else:
            passes.append(([name], grows))
    return passes


def _summed_log_probs(logits: torch.Tensor, item: AttributionInput, positions: list[int]) -> torch.Tensor:
    """(B,) the output tokens' summed log p; logits column c is position positions[c]. A few batch
    rows at a time: one (B, T, V) log-softmax at most."""
    column = {position: c for c, position in enumerate(positions)}
    columns, tokens = [column[row.position] for row in item.rows], [row.token_id for row in item.rows]
    return torch.cat([chunk.float().log_softmax(-1)[:, columns, tokens].sum(1) for chunk in logits.split(16)])


def _ablation_pass(model, item: AttributionInput, layers: list[str], counts: dict[str, int], grows: bool,
                   means: dict[str, torch.Tensor | None]) -> torch.Tensor:
    """(1 + heads,) summed log p of the output tokens: row 0 clean, then one row per head of
    each layer in `layers` with that head alone ablated. Only what the output tokens read is
    computed: a causal input ends at the last of them, and the output layer runs at their
    positions alone (attribution's cut_after_rows and output_at: the same numbers)."""
    rows = 1 + sum(counts[name] for name in layers)
    inputs = tuple(cut_after_rows(item, list(_model_inputs(model, item, rows))))
    replace: dict = {}
    offset = 1
    for name in layers:
        replace[name] = _head_replacement([[]] * offset + [[h] for h in range(counts[name])], means[name])
        offset += counts[name]
    if grows:
        # the first stack runs from batch 1: each ablated layer's input gains its heads' rows as
        # copies of the clean row 0, so nothing below a head is computed for its row
        first = item.sides[0].input_index
        inputs = tuple(t[:1] if k == first else t for k, t in enumerate(inputs))
        added: dict[str, int] = {}
        for name in layers:
            added[_residual_of(name)] = added.get(_residual_of(name), 0) + counts[name]
        for residual, count in added.items():
            replace[residual] = lambda value, count=count: torch.cat(
                [value, value[:1].expand(count, -1, -1)])  # (B + count, T, D)
    positions = sorted({row.position for row in item.rows})
    with output_at(output_layer(model), positions) as sliced:
        logits = run_with(model, inputs, replace=replace).logits
    return _summed_log_probs(logits, item, positions if sliced else list(range(logits.size(1))))


def _patched_stack(workspace, clean: AttributionInput, corrupted: AttributionInput) -> int:
    """The model input the two runs differ in; they must have the same length in tokens."""
    differing = [k for k, (a, b) in enumerate(zip(clean.inputs, corrupted.inputs))
                 if a.shape != b.shape or not torch.equal(a, b)]
    for k in differing or [0]:
        a, b = clean.inputs[k], corrupted.inputs[k]
        if a.shape != b.shape:
            raise UserError(f"the clean and corrupted inputs must have the same length in tokens "
                            f"({a.size(1)} and {b.size(1)})")
    if len(differing) > 1:
        raise UserError("the clean and corrupted runs may differ in the source only")
    return differing[0] if differing else 0


def patch_residual(model, clean: AttributionInput, corrupted: AttributionInput, point: str,
                   positions_by_row: list[list[int]]) -> torch.Tensor:
    """Logits of the corrupted run with `point` (a residual stream, (B, T, D)) at the given
    positions taken from the clean run; batch row b patches positions_by_row[b]."""
    with _Eval(model), torch.no_grad():
        source = run_with(model, _model_inputs(model, clean), read=[point]).values[point]  # (1, T, D)

        def replace(value: torch.Tensor) -> torch.Tensor:
            value = value.clone()
            for b, positions in enumerate(positions_by_row):
                value[b, positions] = source[0, positions].to(value.dtype)
            return value

        batch = len(positions_by_row)
        return run_with(model, _model_inputs(model, corrupted, batch), replace={point: replace}).logits


def activation_patching(workspace, clean_text: str, corrupted_text: str, target: str = "",
                        row: int | None = None, progress=None) -> PatchingResult:
    """Patch each layer's residual stream (into the block) at each position of the input the two
    runs differ in, from the clean run into the corrupted one; the map is the recovered logit
    difference between the clean run's token and the corrupted run's at output `row` (None: the
    first output the corruption changes, else the last)."""
    model = workspace.model
    clean = attribution_input(workspace, clean_text, target)
    target = target or _target_text(workspace, clean)
    corrupted = attribution_input(workspace, corrupted_text, target)
    index = _patched_stack(workspace, clean, corrupted)
    side = next(s for s in clean.sides if s.input_index == index)
    stack = "encoder." if side.name == "source" else ""  # an LM has one stack
    points = [p.name for p in list_points(model, _model_inputs(model, clean))
              if _RESID.match(p.name) and p.name.startswith(stack)]
    if not points:
        raise UserError(f"a {family_of(model).name} model has no residual stream to patch")
    with _Eval(model), torch.no_grad():
        clean_all = run_with(model, _model_inputs(model, clean)).logits[0]  # (T, V)
        corrupted_all = run_with(model, _model_inputs(model, corrupted)).logits[0]
    if row is None:
        changed = [r for r in clean.rows if clean_all[r.position].argmax() != corrupted_all[r.position].argmax()]
        position = (changed[0] if changed else clean.rows[-1]).position
    else:
        position = clean.rows[row].position
    clean_logits, corrupted_logits = clean_all[position], corrupted_all[position]
    answer = int(clean_logits.argmax())
    ranked = corrupted_logits.argsort(descending=True).tolist()
    alternative = ranked[0] if ranked[0] != answer else ranked[1]

    def difference(logits: torch.Tensor) -> torch.Tensor:
        return logits[..., answer] - logits[..., alternative]

    clean_diff, corrupted_diff = float(difference(clean_logits)), float(difference(corrupted_logits))
    scale = clean_diff - corrupted_diff if abs(clean_diff - corrupted_diff) > 1e-9 else 1.0
    length = clean.inputs[index].size(1)
    recovered = np.zeros((len(points), length))
    for layer, point in enumerate(points):
        logits = patch_residual(model, clean, corrupted, point, [[t] for t in range(length)])
        recovered[layer] = ((difference(logits[:, position]) - corrupted_diff) / scale).numpy()
        if progress is not None:
            progress((layer + 1) / len(points))
    tokens = [str(t) or f"<id {i}>" for t, i in zip(workspace.tokenizer.tokens([answer, alternative]),
                                                    (answer, alternative))]
    return PatchingResult([point_label(p[: -len(".hook_resid_pre")]) for p in points], list(side.labels),
                          recovered, tokens[0], tokens[1], clean_diff, corrupted_diff)


def _target_text(workspace, item: AttributionInput) -> str:
    """The clean run's output as text, so the corrupted run is teacher-forced on the same target."""
    if not family_of(workspace.model).has_source:
        return ""
    ids = [row.token_id for row in item.rows]
    return workspace.tokenizer.decode(ids)
