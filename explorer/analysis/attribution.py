"""Why this token: attributions of an output token's log-probability to the source tokens and the
target prefix, for every family (docs/architecture.md, "Attribution").

    result = attribute(workspace, source, target, AttributionSettings(method="ig", steps=50))
    result.scores          # (rows, columns): output tokens x (source + prefix); NaN where a column
                           # cannot influence the row (a later prefix token)
    result.gap             # integrated gradients: sum(attr) - (f(x) - f(baseline)) per row

The attributed quantity f is log p(token), or log p(token) - log p(alternative) with `contrast`.
Methods, on the output of each token-embedding module (read and replaced by forward hooks, so one
code path serves every family):

* `saliency`: ||df/de_j||, the gradient's norm at each token embedding e_j;
* `grad-input`: sum_d e_jd * df/de_jd;
* `ig`: integrated gradients from a baseline b (zero, <pad> or <unk> embeddings) on a straight path,
  Gauss-Legendre nodes as Captum's default, the interpolation steps run `batch_size` at a time;
  the completeness gap sum(attr) - (f(x) - f(b)) measures the integral's error. With a
  `tolerance` the step count is not chosen but found: nested Clenshaw-Curtis rules (4, 8, 16, ...
  intervals; each doubling keeps every node evaluated so far and adds the midpoints) until each
  output token's gap is within tolerance * |f(x) - f(b)|, or `max_steps` (ig_tolerance.py);
* `occlusion`: f(x) - f(x with token j replaced by the baseline embedding, or dropped).

Gradients come from torch.autograd.grad: parameters' .grad (the trainer's) are never touched, and
the model is put back in the mode it was in. Everything returned is numpy.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from explorer.analysis.activations import provider_for
from explorer.analysis.attribution_input import AttributionInput, Row, attribution_input, token_id
from explorer.analysis.ig_tolerance import FIRST_LEVEL, MAX_STEPS, clenshaw_curtis, levels, new_nodes
from explorer.analysis.this_thread import this_thread_only
from explorer.errors import UserError

METHODS = ("ig", "saliency", "grad-input", "occlusion")
BASELINES = ("pad", "zero", "unk")
OCCLUSIONS = ("replace", "drop")
# a completeness gap above this share of |f(x) - f(baseline)| is flagged: more steps are needed
GAP_WARNING = 0.05
ALTERNATIVES = 8  # the most probable other tokens offered as contrasts, per output token
# rows x batch entries one batched vector-Jacobian product carries: its activations' gradients
# are that many copies of one forward pass's
_VJP_ROWS = 512


class Cancelled(UserError):
    """The user stopped the computation."""


@dataclass(frozen=True)
class AttributionSettings:
    method: str = "ig"
    steps: int = 50  # integrated gradients' interpolation steps
    baseline: str = "pad"  # ig's path start and occlusion's replacement: pad, zero or unk embeddings
    batch_size: int = 16  # interpolation steps (or occluded copies) per forward pass
    contrast: str | None = None  # explain log p(token) - log p(contrast)
    occlusion: str = "replace"  # replace a token by the baseline, or drop it
    # integrated gradients until each row's |gap| <= tolerance * |f(x) - f(baseline)| (steps then
    # unused); None: exactly `steps` Gauss-Legendre nodes
    tolerance: float | None = None
    max_steps: int = MAX_STEPS  # the tolerance mode's cap on the points evaluated

    def check(self) -> None:
        if self.method not in METHODS:
            raise UserError(f"unknown attribution method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.baseline not in BASELINES:
            raise UserError(f"unknown baseline {self.baseline!r}; choose one of {', '.join(BASELINES)}")
        if self.occlusion not in OCCLUSIONS:
            raise UserError(f"unknown occlusion {self.occlusion!r}; choose replace or drop")
        if self.method == "ig" and self.steps < 1:
            raise UserError(f"integrated gradients needs at least 1 step (got {self.steps})")
        if self.batch_size < 1:
            raise UserError(f"the batch size must be at least 1 (got {self.batch_size})")
        if self.tolerance is not None and not 0 < self.tolerance < 1:
            raise UserError(f"the tolerance is a share of |f(x) - f(baseline)| between 0 and 1 "
                            f"(got {self.tolerance})")
        if self.max_steps < FIRST_LEVEL + 1:
            raise UserError(f"the tolerance mode's cap must be at least {FIRST_LEVEL + 1} steps "
                            f"(got {self.max_steps})")


# what the app's attribution panel opens with (and `explorer export` computes headless as it):
# integrated gradients to a 1% completeness gap
APP_SETTINGS = AttributionSettings(tolerance=0.01)


@dataclass
class AttributionResult:
    """Plain data for the panel, the CLI and the export."""

    method: str
    baseline: str | None
    steps: int | None
    contrast: str | None
    rows: list[str]  # the output tokens explained
    positions: list[int]  # their positions in the output
    sides: list[tuple[str, list[str]]]  # column groups in order: ("source", labels), ("prefix", ...)
    scores: np.ndarray  # (R, C) NaN where the column cannot influence the row
    target: np.ndarray  # (R,) f(x)
    baseline_target: np.ndarray | None = None  # (R,) f(baseline), integrated gradients only
    gap: np.ndarray | None = None  # (R,) sum of the row's attributions - (f(x) - f(baseline))
    row_steps: np.ndarray | None = None  # (R,) integrated gradients' points used per row
    tolerance: float | None = None  # the gap sought (tolerance mode); None: fixed steps
    notes: list[str] = field(default_factory=list)
    # per row the model's most probable other tokens there, best first: contrasts to choose from
    alternative_ids: list[list[int]] = field(default_factory=list)
    alternatives: list[list[str]] = field(default_factory=list)  # their labels (attribute())

    @property
    def columns(self) -> list[str]:
        return [label for _, labels in self.sides for label in labels]

    @property
    def relative_gap(self) -> np.ndarray | None:
        if self.gap is None:
            return None
        change = np.abs(self.target - self.baseline_target)
        return np.abs(self.gap) / np.maximum(change, 1e-12)

    @property
    def warning(self) -> str | None:
        relative = self.relative_gap
        limit = GAP_WARNING if self.tolerance is None else self.tolerance
        if relative is None or not len(relative) or relative.max() <= limit:
            return None
        worst = int(relative.argmax())
        advice = ("use more steps" if self.tolerance is None else
                  f"the tolerance {100 * self.tolerance:g}% was not reached in {self.row_steps[worst]} steps")
        return (f"completeness gap {100 * relative[worst]:.1f}% of |f(x) - f(baseline)| at "
                f"{self.rows[worst]!r}: {advice}")

    def to_dict(self) -> dict:
        """JSON-ready: per output token its attributions over each side (`explorer attribute`)."""
        relative = self.relative_gap
        outputs = []
        for r, label in enumerate(self.rows):
            entry = {"token": label, "position": self.positions[r], "target": float(self.target[r]),
                     **self.side_scores(r)}
            if self.alternatives:
                entry["alternatives"] = self.alternatives[r]
            if self.gap is not None:
                entry.update(gap=float(self.gap[r]), relative_gap=float(relative[r]),
                             baseline_target=float(self.baseline_target[r]), steps=int(self.row_steps[r]))
            outputs.append(entry)
        return {"method": self.method, "baseline": self.baseline, "steps": self.steps,
                "tolerance": self.tolerance,
                "contrast": self.contrast, "sides": [name for name, _ in self.sides],
                **{name: labels for name, labels in self.sides}, "outputs": outputs,
                "warning": self.warning}

    def side_scores(self, row: int) -> dict[str, list[float]]:
        """One row's attributions per side, cut to the columns that can influence it."""
        out, start = {}, 0
        for name, labels in self.sides:
            values = self.scores[row, start:start + len(labels)]
            start += len(labels)
            out[name] = [float(v) for v in values[~np.isnan(values)]] if name != "source" else [
                float(v) for v in values]
        return out


Progress = Callable[[float], None]
ShouldStop = Callable[[], bool]


def attribute(workspace, source: str, target: str = "", settings: AttributionSettings = AttributionSettings(),
              rows: list[int] | None = None, progress: Progress | None = None,
              should_stop: ShouldStop | None = None) -> AttributionResult:
    """Attributions of every output token (or the `rows` chosen, by index) of one example."""
    settings.check()
    item = attribution_input(workspace, source, target)
    if rows is not None:
        item.rows = [item.rows[i] for i in rows if 0 <= i < len(item.rows)]
        if not item.rows:
            raise UserError("none of the chosen output tokens is in this output")
    contrast_id = None
    if settings.contrast:
        contrast_id = token_id(workspace.tokenizer, settings.contrast)
    result = attribute_item(workspace.model, item, settings, contrast_id, progress, should_stop)
    result.alternatives = [[str(t) for t in workspace.tokenizer.tokens(ids)] for ids in result.alternative_ids]
    return result


def attribute_item(model, item: AttributionInput, settings: AttributionSettings,
                   contrast_id: int | None = None, progress: Progress | None = None,
                   should_stop: ShouldStop | None = None) -> AttributionResult:
    settings.check()
    run = _Run(model, item, contrast_id, progress, should_stop)
    was_training = model.training
    model.eval()  # no dropout: attributions of what the model computes
    try:
        with torch.enable_grad():
            return run.compute(settings)
    finally:
        model.train(was_training)


class _Run:
    def __init__(self, model, item: AttributionInput, contrast_id, progress, should_stop) -> None:
        self.model, self.item, self.contrast_id = model, item, contrast_id
        self.progress, self.should_stop = progress or (lambda fraction: None), should_stop
        device = next(model.parameters()).device
        self.inputs = cut_after_rows(item, [t.to(device) for t in item.inputs])
        self.head = output_layer(model)
        # the output layer runs only at the explained positions: column c of the logits is position
        # positions[c] (the identity when the model's output layer could not be found)
        self.positions = sorted({row.position for row in item.rows})
        with torch.no_grad():
            captured: list[torch.Tensor] = []
            read: list[torch.Tensor] = []
            with embedding_hooks(item, captured=captured, read=read):
                self.logits = self.forward_logits(self.inputs)
        self.embedded = [e.detach() for e in captured]  # per side (1, T, D), T cut after the rows
        # a side the model reads backwards (seq2seq's reverse_source) is embedded in reading
        # order: its columns are flipped back to the text's order
        self.reversed = [not torch.equal(ids, self.inputs[side.input_index])
                         and torch.equal(ids, self.inputs[side.input_index].flip(1))
                         for side, ids in zip(item.sides, read)]

    # ---- pieces -------------------------------------------------------------------------------
    def forward_logits(self, inputs: list[torch.Tensor], hidden: list | None = None) -> torch.Tensor:
        """(B, P, V) logits at the explained positions only (the output layer is most of the cost
        of a forward pass at a large vocabulary); `hidden` gets the output layer's input (B, P, D)."""
        with output_at(self.head, self.positions, hidden) as sliced:
            logits = _logits(self.model(*inputs))
        if not sliced:
            self.positions = list(range(logits.size(1)))
        return logits

    def forward(self, replacements: list[torch.Tensor], hidden: list | None = None):
        """Logits with each side's embedding output replaced; batch = the replacements' batch."""
        batch = replacements[0].size(0)
        with embedding_hooks(self.item, replace=replacements):
            return self.forward_logits([t.expand(batch, -1) for t in self.inputs], hidden)

    def quantity(self, logits: torch.Tensor, row: Row, position: int | None = None) -> torch.Tensor:
        """f for each batch entry: log p(token) [- log p(contrast)], (B,). Without `position` the
        logits are the explained positions' (forward); with it, a whole output's."""
        column = self.positions.index(row.position) if position is None else position
        logprobs = logits[:, column].float().log_softmax(-1)
        value = logprobs[:, row.token_id]
        if self.contrast_id is not None:
            value = value - logprobs[:, self.contrast_id]
        return value

    def baseline(self, kind: str) -> list[torch.Tensor]:
        """Each side's baseline embedding (1, T, D): zeros, or the embedding of <pad> / <unk>."""
        if kind == "zero":
            return [torch.zeros_like(e) for e in self.embedded]
        ids = self.item.pad_ids if kind == "pad" else self.item.unk_ids
        with torch.no_grad():
            return [side.modules[0](torch.full_like(self.inputs[side.input_index], ids[k])).detach()
                    for k, side in enumerate(self.item.sides)]

    def in_text_order(self, per_side: list[torch.Tensor]) -> torch.Tensor:
        """Per-side scores (..., T_k) in the text's order, concatenated into columns; a side cut
        after the explained positions is padded back to its length (those columns are unreachable)."""
        padded = [torch.nn.functional.pad(s.flip(-1) if flipped else s, (0, len(side.labels) - s.size(-1)))
                  for s, flipped, side in zip(per_side, self.reversed, self.item.sides)]
        return torch.cat(padded, dim=-1)

    def row_gradients(self, logits: torch.Tensor, hidden: list, points: list[torch.Tensor],
                      rows: list[int]) -> list[torch.Tensor]:
        """Per point (R', B, T, D): d f_row / d points for each row index in `rows`, batch entry by
        batch entry, all from the one graph of this forward pass: the rows' vector-Jacobian
        products run batched (is_grads_batched), a few rows at a time to bound the memory. When
        the output layer ran at the explained positions only, each row's f reads its own column of
        that layer's input: one backward through the output layer serves every row, and the
        batched products start below it."""
        chosen = [self.item.rows[r] for r in rows]
        values = [self.quantity(logits, row) for row in chosen]  # each (B,)
        batch = values[0].size(0)
        sliced = len(hidden) == 1 and len({row.position for row in self.item.rows}) == len(self.item.rows)
        if sliced:
            (shared,) = torch.autograd.grad(sum(v.sum() for v in values), hidden[0], retain_graph=True)
        group = max(1, _VJP_ROWS // batch)
        out: list[list[torch.Tensor]] = [[] for _ in points]
        for first in range(0, len(chosen), group):
            part = range(first, min(first + group, len(chosen)))
            last = part.stop == len(chosen)
            if sliced:
                own = shared.new_zeros((len(part), *shared.shape))  # (R', B, P, D)
                for i, r in enumerate(part):
                    column = self.positions.index(chosen[r].position)
                    own[i, :, column] = shared[:, column]  # this row's part only
                output, cotangent = hidden[0], own
            else:  # the output layer not sliced: one-hot cotangents on the rows' values
                output = torch.stack([values[r] for r in part])  # (R', B)
                cotangent = torch.eye(len(part), dtype=output.dtype, device=output.device)[:, :, None]
                cotangent = cotangent.expand(-1, -1, batch)  # (R', R', B)
            if len(part) == 1:  # one row: a plain backward pass (vmap's batching costs more)
                grads = torch.autograd.grad(output, points, grad_outputs=cotangent[0],
                                            retain_graph=not last, allow_unused=True)
                grads = tuple(None if g is None else g.unsqueeze(0) for g in grads)
            else:
                grads = torch.autograd.grad(output, points, grad_outputs=cotangent, retain_graph=not last,
                                            allow_unused=True, is_grads_batched=True)
            for k, (point, grad) in enumerate(zip(points, grads)):
                out[k].append(point.new_zeros((len(part), *point.shape)) if grad is None else grad)
        return [torch.cat(parts) for parts in out]

    def check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise Cancelled("attribution stopped")

    def reachable(self) -> np.ndarray:
        """(R, C) True where the column can influence the row (causal prefixes see no later token)."""
        blocks = []
        for side in self.item.sides:
            columns = np.arange(len(side.labels))
            positions = np.array([row.position for row in self.item.rows])[:, None]
            blocks.append(columns[None, :] <= positions if side.causal else
                          np.ones((len(self.item.rows), len(columns)), bool))
        return np.concatenate(blocks, axis=1)

    def result(self, settings, scores: np.ndarray, **extra) -> AttributionResult:
        scores = np.where(self.reachable(), scores, np.nan)
        target = np.array([self.quantity(self.logits, row).item() for row in self.item.rows])
        alternatives = []
        for row in self.item.rows:
            logits = self.logits[0, self.positions.index(row.position)]  # (V,)
            ranked = logits.topk(min(ALTERNATIVES + 1, logits.numel())).indices.tolist()
            alternatives.append([i for i in ranked if i != row.token_id][:ALTERNATIVES])
        ig, occlusion = settings.method == "ig", settings.method == "occlusion"
        return AttributionResult(
            method=settings.method, baseline=settings.baseline if ig or occlusion else None,
            steps=settings.steps if ig else None, contrast=settings.contrast,
            rows=[row.label for row in self.item.rows], positions=[row.position for row in self.item.rows],
            sides=[(side.name, list(side.labels)) for side in self.item.sides],
            scores=scores, target=target, alternative_ids=alternatives, **extra)

    # ---- methods ------------------------------------------------------------------------------
    def compute(self, settings: AttributionSettings) -> AttributionResult:
        if settings.method == "ig":
            return self.integrated_gradients(settings)
        if settings.method == "occlusion":
            return self.occlusion(settings)
        return self.gradients(settings)

    def gradients(self, settings) -> AttributionResult:
        leaves = [e.clone().requires_grad_() for e in self.embedded]
        hidden: list[torch.Tensor] = []
        logits = self.forward(leaves, hidden)
        self.check_stop()
        grads = self.row_gradients(logits, hidden, leaves, list(range(len(self.item.rows))))  # (R, 1, T, D)
        per_side = [grad.norm(dim=-1) if settings.method == "saliency" else (grad * leaf).sum(-1)
                    for leaf, grad in zip(leaves, grads)]  # (R, 1, T)
        self.progress(1.0)
        scores = self.in_text_order(per_side)[:, 0].detach().cpu().numpy()  # (R, C)
        return self.result(settings, scores.astype(np.float64))

    def path_gradients(self, alphas: np.ndarray, rows: list[int], baselines, deltas, batch: int,
                       done: Callable[[int], None]) -> np.ndarray:
        """(len(alphas), len(rows), C) float64: at each point b + alpha (x - b) of the path, each
        row's gradient dotted with x - b per token, in text order. `batch` points a pass."""
        out = []
        for start in range(0, len(alphas), batch):
            self.check_stop()
            alpha = torch.tensor(alphas[start:start + batch], dtype=self.embedded[0].dtype,
                                 device=self.embedded[0].device)[:, None, None]  # (k, 1, 1)
            points = [(b + alpha * d).requires_grad_() for b, d in zip(baselines, deltas)]  # (k, T, D)
            hidden: list[torch.Tensor] = []
            logits = self.forward(points, hidden)
            grads = self.row_gradients(logits, hidden, points, rows)  # per side (R', k, T, D)
            per_side = [(grad.double() * d.double()).sum(-1) for grad, d in zip(grads, deltas)]  # (R', k, T)
            out.append(self.in_text_order(per_side).transpose(0, 1).cpu().numpy())  # (k, R', C)
            done(len(alpha))
        return np.concatenate(out)

    def integrated_gradients(self, settings) -> AttributionResult:
        baselines = self.baseline(settings.baseline)
        deltas = [e - b for e, b in zip(self.embedded, baselines)]  # (1, T, D)
        with torch.no_grad():
            base_logits = self.forward(baselines)
        baseline_target = np.array([self.quantity(base_logits, row).item() for row in self.item.rows])
        target = np.array([self.quantity(self.logits, row).item() for row in self.item.rows])
        rows = list(range(len(self.item.rows)))
        if settings.tolerance is None:
            alphas, weights = gauss_legendre(settings.steps)
            evaluated = [0]

            def done(count: int) -> None:
                evaluated[0] += count
                self.progress(evaluated[0] / len(alphas))

            values = self.path_gradients(np.array(alphas), rows, baselines, deltas, settings.batch_size,
                                         done)  # (S, R, C)
            attributions = np.einsum("s,src->rc", np.array(weights), values)
            steps = np.full(len(rows), settings.steps)
        else:
            attributions, steps = self.to_tolerance(settings, baselines, deltas, target - baseline_target)
        result = self.result(settings, attributions, baseline_target=baseline_target)
        result.gap = attributions.sum(1) - (target - baseline_target)
        result.row_steps = steps
        result.steps = int(steps.max())
        result.tolerance = settings.tolerance
        return result

    def to_tolerance(self, settings, baselines, deltas, change: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nested Clenshaw-Curtis rules, doubled until each row's |gap| <= tolerance * |change|
        (or the cap). A row that has converged gets no more backward passes; every evaluated
        point is kept. Returns the (R, C) attributions and each row's points used."""
        n_rows = len(self.item.rows)
        attributions = np.zeros((n_rows, sum(len(side.labels) for side in self.item.sides)))
        steps = np.zeros(n_rows, dtype=int)
        open_rows = list(range(n_rows))
        values: np.ndarray | None = None  # (nodes of the current rule, open rows, C)
        schedule = levels(settings.max_steps)
        evaluated = [0]

        def done(count: int) -> None:
            evaluated[0] += count
            self.progress(min(evaluated[0] / (schedule[-1] + 1), 1.0))

        for intervals in schedule:
            nodes, weights = clenshaw_curtis(intervals)
            fresh = new_nodes(intervals)
            new = self.path_gradients(nodes[fresh], open_rows, baselines, deltas, settings.batch_size, done)
            if values is None:
                values = new
            else:  # the previous rule's nodes are the even ones of this rule
                merged = np.empty((intervals + 1, *new.shape[1:]))
                merged[0::2], merged[1::2] = values, new
                values = merged
            estimate = np.einsum("s,src->rc", weights, values)  # (open rows, C)
            gap = np.abs(estimate.sum(1) - change[open_rows])
            finished = (gap <= settings.tolerance * np.abs(change[open_rows])) | (intervals == schedule[-1])
            for i in np.flatnonzero(finished):
                attributions[open_rows[i]] = estimate[i]
                steps[open_rows[i]] = intervals + 1
            open_rows = [r for r, f in zip(open_rows, finished) if not f]
            values = values[:, ~finished]
            if not open_rows:
                break
        return attributions, steps

    def occlusion(self, settings) -> AttributionResult:
        baselines = self.baseline(settings.baseline)
        full = np.array([self.quantity(self.logits, row).item() for row in self.item.rows])
        blocks = []
        total = sum(len(side.labels) for side in self.item.sides)
        done = 0
        for k, side in enumerate(self.item.sides):
            length = self.embedded[k].size(1)  # a side cut after the rows: the rest is unreachable
            block = np.full((len(self.item.rows), len(side.labels)), np.nan)
            for start in range(0, length, settings.batch_size):
                self.check_stop()
                positions = list(range(start, min(start + settings.batch_size, length)))
                if settings.occlusion == "drop":
                    self._drop(k, positions, full, block)
                else:
                    self._replace(k, positions, baselines[k], full, block)
                done += len(positions)
                self.progress(done / total)
            blocks.append(block)
        return self.result(settings, np.concatenate(blocks, axis=1))

    def _replace(self, k, positions, baseline, full, block) -> None:
        """Every copy in the batch has one token of side k replaced by the baseline embedding."""
        batch = len(positions)
        replacements = [e.expand(batch, -1, -1).clone() for e in self.embedded]
        length = replacements[k].size(1)
        for i, j in enumerate(positions):
            at = length - 1 - j if self.reversed[k] else j  # the embedding is in reading order
            replacements[k][i, at] = baseline[0, at]
        with torch.no_grad():
            logits = self.forward(replacements)
        for r, row in enumerate(self.item.rows):
            block[r, positions] = full[r] - self.quantity(logits, row).cpu().numpy()

    def _drop(self, k, positions, full, block) -> None:
        """One token of side k left out; on the side the outputs are read from, the explained
        position moves one to the left when the dropped token came before it."""
        side = self.item.sides[k]
        output_side = side.name != "source"
        for j in positions:
            ids = self.inputs[side.input_index]
            if ids.size(1) < 2:
                continue  # nothing left to read
            kept = torch.cat([ids[:, :j], ids[:, j + 1:]], dim=1)
            inputs = list(self.inputs)
            inputs[side.input_index] = kept
            with torch.no_grad():
                logits = _logits(self.model(*inputs))
            for r, row in enumerate(self.item.rows):
                position = row.position
                if output_side and j <= position:
                    if j == position and not side.causal or position == 0:
                        continue  # the explained token itself (a mask) is gone
                    position -= 1
                block[r, j] = full[r] - self.quantity(logits, row, position).item()


def cut_after_rows(item: AttributionInput, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """A causal side's tokens after the last explained position cannot change any explained
    output: the input is cut there (less to compute, the same numbers)."""
    last = max(row.position for row in item.rows)
    for index in {side.input_index for side in item.sides}:
        if all(side.causal for side in item.sides if side.input_index == index):
            inputs[index] = inputs[index][:, : last + 1]
    return inputs


def output_layer(model) -> torch.nn.Module | None:
    """The linear layer that turns the last hidden states into logits (its weight is the model's
    output embedding), or None when the model has none."""
    weight = provider_for(model).embeddings(model).get("output")
    found = [module for module in model.modules()
             if isinstance(module, torch.nn.Linear) and module.weight is weight]
    return found[0] if len(found) == 1 else None


@contextlib.contextmanager
def output_at(head: torch.nn.Module | None, positions: list[int], hidden: list | None = None):
    """While open, the output layer computes only at `positions` of its (B, T, D) input: the model
    returns (B, P, V) logits. Yields a list that is true once the layer was sliced; `hidden` gets
    the sliced input. Other threads' passes go through untouched."""
    sliced: list[bool] = []
    if head is None:
        yield sliced
        return
    @this_thread_only
    def hook(module, args):
        x = args[0]
        if x.dim() != 3 or x.size(1) <= max(positions):
            return None
        x = x[:, positions]  # (B, P, D)
        sliced.append(True)
        if hidden is not None:
            hidden.append(x)
        return (x, *args[1:])

    handle = head.register_forward_pre_hook(hook)
    try:
        yield sliced
    finally:
        handle.remove()


def gauss_legendre(steps: int) -> tuple[list[float], list[float]]:
    """Nodes in [0, 1] and weights of the Gauss-Legendre rule (Captum's default for IG)."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return list(0.5 * (nodes + 1)), list(0.5 * weights)


def _logits(output) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output  # (B, T, V)


@contextlib.contextmanager
def embedding_hooks(item: AttributionInput, captured: list | None = None,
                    replace: list[torch.Tensor] | None = None, read: list | None = None):
    """Forward hooks on the sides' embedding modules: the k-th embedding call of a forward pass is
    side k (encoders embed before decoders; T5 and Marian call one shared table twice). Each call's
    output is appended to `captured` and/or replaced by `replace[k]`; `read` gets the ids it read.
    Calls from other threads (a decoding panel on the same model) pass through untouched."""
    calls = [0]
    @this_thread_only  # a module's hooks fire in every thread: decoders may run too
    def hook(module, args, output):
        k = calls[0]
        calls[0] += 1
        if k >= len(item.sides) or not any(module is m for m in item.sides[k].modules):
            raise RuntimeError("the model embedded its inputs in an unexpected order")
        if captured is not None:
            captured.append(output)
        if read is not None:
            read.append(args[0])
        return replace[k] if replace is not None else output

    modules = {id(module): module for side in item.sides for module in side.modules}
    handles = [module.register_forward_hook(hook) for module in modules.values()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
    if calls[0] != len(item.sides) and not (captured is None and replace is None):
        raise RuntimeError(f"expected {len(item.sides)} embedding calls, saw {calls[0]}")
