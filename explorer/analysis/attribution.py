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
  the completeness gap sum(attr) - (f(x) - f(b)) measures the integral's error;
* `occlusion`: f(x) - f(x with token j replaced by the baseline embedding, or dropped).

Gradients come from torch.autograd.grad: parameters' .grad (the trainer's) are never touched, and
the model is put back in the mode it was in. Everything returned is numpy.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from explorer.analysis.activations import provider_for
from explorer.analysis.attribution_input import AttributionInput, Row, attribution_input, token_id
from explorer.errors import UserError

METHODS = ("ig", "saliency", "grad-input", "occlusion")
BASELINES = ("pad", "zero", "unk")
OCCLUSIONS = ("replace", "drop")
# a completeness gap above this share of |f(x) - f(baseline)| is flagged: more steps are needed
GAP_WARNING = 0.05
ALTERNATIVES = 8  # the most probable other tokens offered as contrasts, per output token


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
        if relative is None or not len(relative) or relative.max() <= GAP_WARNING:
            return None
        worst = int(relative.argmax())
        return (f"completeness gap {100 * relative[worst]:.1f}% of |f(x) - f(baseline)| at "
                f"{self.rows[worst]!r}: use more steps")

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
                             baseline_target=float(self.baseline_target[r]))
            outputs.append(entry)
        return {"method": self.method, "baseline": self.baseline, "steps": self.steps,
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
                      weight: torch.Tensor | None = None):
        """For each row in turn: d (sum over the batch of weight * f_row) / d points. Each row's f
        reads only its own column of the output layer's input, so one backward through the output
        layer serves every row; then one backward per row through the network below it."""
        rows = self.item.rows
        values = [self.quantity(logits, row) * (1.0 if weight is None else weight) for row in rows]
        if len(hidden) != 1 or len(rows) != len(self.positions):  # the output layer not sliced
            for r, value in enumerate(values):
                yield torch.autograd.grad(value.sum(), points, retain_graph=r < len(rows) - 1,
                                          allow_unused=True)
            return
        (shared,) = torch.autograd.grad(sum(v.sum() for v in values), hidden[0], retain_graph=True)
        for r, row in enumerate(rows):
            column = self.positions.index(row.position)
            own = torch.zeros_like(shared)
            own[:, column] = shared[:, column]  # (B, P, D): this row's part only
            yield torch.autograd.grad(hidden[0], points, grad_outputs=own, retain_graph=r < len(rows) - 1,
                                      allow_unused=True)

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
        rows = []
        for r, grads in enumerate(self.row_gradients(logits, hidden, leaves)):
            self.check_stop()
            per_side = []
            for leaf, grad in zip(leaves, grads):
                grad = torch.zeros_like(leaf) if grad is None else grad
                per_side.append(grad.norm(dim=-1) if settings.method == "saliency" else (grad * leaf).sum(-1))
            rows.append(self.in_text_order(per_side)[0].detach().cpu().numpy())  # (C,)
            self.progress((r + 1) / len(self.item.rows))
        return self.result(settings, np.stack(rows).astype(np.float64))

    def integrated_gradients(self, settings) -> AttributionResult:
        alphas, weights = gauss_legendre(settings.steps)
        baselines = self.baseline(settings.baseline)
        deltas = [e - b for e, b in zip(self.embedded, baselines)]  # (1, T, D)
        n_rows = len(self.item.rows)
        totals = [torch.zeros((n_rows, *e.shape[1:]), dtype=torch.float64, device=e.device)
                  for e in self.embedded]  # per side (R, T, D): the weighted sum of gradients
        chunks = [range(i, min(i + settings.batch_size, len(alphas)))
                  for i in range(0, len(alphas), settings.batch_size)]
        for c, chunk in enumerate(chunks):
            self.check_stop()
            alpha = torch.tensor(alphas[chunk.start:chunk.stop], dtype=self.embedded[0].dtype,
                                 device=self.embedded[0].device)[:, None, None]  # (k, 1, 1)
            weight = torch.tensor(weights[chunk.start:chunk.stop], device=alpha.device)
            points = [(b + alpha * d).requires_grad_() for b, d in zip(baselines, deltas)]  # (k, T, D)
            hidden: list[torch.Tensor] = []
            logits = self.forward(points, hidden)
            for r, grads in enumerate(self.row_gradients(logits, hidden, points, weight)):
                self.check_stop()
                for total, grad in zip(totals, grads):
                    if grad is not None:
                        total[r] += grad.sum(0).double()
            self.progress((c + 1) / len(chunks))
        attributions = self.in_text_order([(total * d.double()).sum(-1)
                                           for total, d in zip(totals, deltas)]).cpu().numpy()  # (R, C)
        with torch.no_grad():
            base_logits = self.forward(baselines)
        baseline_target = np.array([self.quantity(base_logits, row).item() for row in self.item.rows])
        result = self.result(settings, attributions, baseline_target=baseline_target)
        result.gap = attributions.sum(1) - (result.target - baseline_target)
        return result

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
    owner = threading.get_ident()

    def hook(module, args):
        x = args[0]
        if threading.get_ident() != owner or x.dim() != 3 or x.size(1) <= max(positions):
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
    owner = threading.get_ident()  # a module's hooks fire in every thread: decoders may run too

    def hook(module, args, output):
        if threading.get_ident() != owner:
            return None
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
