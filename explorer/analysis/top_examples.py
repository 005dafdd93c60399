"""The examples on which one unit or one attention head is most active (CircuitsVis, exBERT).

    query = ActivityQuery(("lm.rnn.l0.fwd.hook_h",), 5, "unit l1:5")
    found = top_examples(workspace, pairs, query, k=10)
    found.rows, found.activity, found.snippet(0)     # "…a b [c] d e…"

Activity is read at a named activation point (explorer.analysis.activations), so no model kind is
named here:

* a unit (any point of shape (B, T, D): h_t, c_t, a gate, a block's output): |value| of that unit
  at each position;
* a head (a `hook_pattern` point, (B, H, Tq, Tk), or an RNN's alignment (B, Tq, Tk)): at each query
  position, the head's largest weight on any key but the first. A head with nothing to do parks
  its attention on the first key, so that weight says little; one that finds what it looks for
  puts its weight elsewhere.

An example's activity is its peak over positions; the top k examples are ranked by it (ties: the
earlier example first). Examples are fed as the Examples table scores them (teacher forcing):
a seq2seq source is `tokens + [<eos>]` and its decoder reads `[<bos>] + reference`; a language
model reads `[<bos>] + text`. Batches are right-padded, with padding masks for encoder-decoders.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from explorer.errors import UserError

BATCH_SIZE = 32
CONTEXT = 4  # tokens shown on each side of the peak
HEAD_ACTIVITY = ("a head's activity at a query position is its largest attention weight on any key "
                 "but the first (an idle head parks its attention on the first key)")
UNIT_ACTIVITY = "a unit's activity at a position is |value| there"


@dataclass(frozen=True)
class ActivityQuery:
    """One unit or head: `points` are the activation points to read, the first the model has
    (an attention kind and layer may be a Transformer's block or an RNN's one alignment)."""

    points: tuple[str, ...]
    index: int  # the unit (dimension) or head
    label: str  # for the view: "unit l1:5", "cross-attention, layer 2, head 1"

    @property
    def is_head(self) -> bool:
        return self.points[0].endswith("hook_pattern")

    @property
    def definition(self) -> str:
        return HEAD_ACTIVITY if self.is_head else UNIT_ACTIVITY


@dataclass
class TopExamples:
    """The k examples where the query is most active, most active first."""

    query: ActivityQuery
    point: str  # the point read
    rows: np.ndarray  # (k,) indices into the pairs
    activity: np.ndarray  # (k,) the peak activity
    positions: np.ndarray  # (k,) where it peaks (a position of the point's side)
    before: list[str]  # the context tokens before the peak, joined
    peak: list[str]  # the token at the peak
    after: list[str]
    keys: list[str]  # heads: the key but the first it weights most there ("" for units)
    examples: int  # examples read

    def snippet(self, i: int) -> str:
        return f"…{self.before[i]} [{self.peak[i]}] {self.after[i]}…"

    def table(self) -> tuple[list[str], list[list]]:
        header = ["rank", "example", "activity", "position", "snippet", "key"]
        return header, [[i + 1, int(self.rows[i]), float(self.activity[i]), int(self.positions[i]),
                         self.snippet(i), self.keys[i]] for i in range(len(self.rows))]


def point_of_layer(trace_name: str, quantity: str = "h") -> str | None:
    """The activation point of a hidden panel's layer (its trace name) and quantity: "lm.l0", "h"
    -> "lm.rnn.l0.fwd.hook_h"; "encoder.l1_reverse", "c" -> "encoder.rnn.l1.bwd.hook_c";
    "decoder.layer1" (a Transformer block's output) -> "decoder.blocks.1.hook_resid_post"."""
    import re

    found = re.fullmatch(r"(\w+)\.l(ayer)?(\d+)(_reverse)?", trace_name)
    if found is None:
        return None
    stack, block, k, reverse = found.groups()
    if block:
        return f"{stack}.blocks.{k}.hook_resid_post"
    hook = quantity if quantity in ("h", "c") else f"gate_{quantity}"
    return f"{stack}.rnn.l{k}.{'bwd' if reverse else 'fwd'}.hook_{hook}"


def attention_points(kind: str, layer: int) -> tuple[str, ...]:
    """The points of an attention panel's map (kind "encoder", "decoder" or "cross", a layer)."""
    if kind == "cross":  # a Transformer's cross-attention block, or an RNN decoder's alignment
        return (f"decoder.blocks.{layer}.cross_attn.hook_pattern", "decoder.cross_attn.hook_pattern")
    return (f"{kind}.blocks.{layer}.attn.hook_pattern",)


@dataclass
class _Fed:
    """One batch as the model reads it, with each side's ids per row."""

    inputs: tuple
    sides: dict[str, list[list[int]]]  # "encoder"/"decoder"/"lm" -> ids per row, as fed


def _feed(workspace, pairs: Sequence[tuple[str, str]]) -> _Fed:
    from explorer.analysis.examples import _padded, _target_ids
    from explorer.decoding.incremental import special_ids
    from explorer.decoding.limits import input_limit
    from explorer.decoding.scoring import encode_context

    model = workspace.model
    start_id, _, pad_id = special_ids(model)
    limit = input_limit(model)
    device = next(model.parameters()).device
    if workspace.is_seq2seq:
        sources = [encode_context(workspace, source, "a source")[:limit] for source, _ in pairs]
        fed = [([start_id] + _target_ids(workspace, reference)[:-1])[:limit] for _, reference in pairs]
        src, src_pad = _padded(sources, pad_id)
        tgt, tgt_pad = _padded(fed, pad_id)
        inputs = tuple(t.to(device) for t in (src, tgt, src_pad, tgt_pad))
        return _Fed(inputs, {"encoder": sources, "decoder": fed})
    fed = [([start_id] + list(workspace.tokenizer.encode(text)))[:limit] for text, _ in pairs]
    tokens, _ = _padded(fed, pad_id)  # right padding never reaches a causal model's left
    return _Fed((tokens.to(device),), {"decoder": fed, "lm": fed, "encoder": fed})


def _activity(values, index: int, is_head: bool) -> np.ndarray:
    """(B, T) activity per row and position, from the point's value."""
    import torch

    if is_head:
        weights = values if values.dim() == 4 else values.unsqueeze(1)  # (B, H, Tq, Tk)
        if not 0 <= index < weights.shape[1]:
            raise UserError(f"head {index + 1} does not exist: this map has {weights.shape[1]} heads")
        head = weights[:, index]  # (B, Tq, Tk)
        if head.shape[-1] < 2:
            return torch.zeros(head.shape[:2]).numpy()
        return head[..., 1:].amax(dim=-1).float().cpu().numpy()
    if not 0 <= index < values.shape[-1]:
        raise UserError(f"unit {index} does not exist: this layer has {values.shape[-1]} units")
    return values[..., index].abs().float().cpu().numpy()  # (B, T)


def top_examples(workspace, pairs: Sequence[tuple[str, str]], query: ActivityQuery, k: int = 10,
                 context: int = CONTEXT, batch_size: int = BATCH_SIZE,
                 progress: Callable[[int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> TopExamples | None:
    """The `k` examples of `pairs` where `query` peaks highest (None when stopped)."""
    from explorer.analysis.activations import list_points, run_with
    from explorer.decoding.incremental import inference

    if not pairs:
        raise UserError("there are no examples to search")
    if k < 1:
        raise UserError(f"ask for at least one example, not {k}")
    model = workspace.model
    stack = None
    peaks = np.zeros(len(pairs))
    where = np.zeros(len(pairs), dtype=np.int64)
    key_at = np.zeros(len(pairs), dtype=np.int64)
    sides: dict[str, list[list[int]]] = {}
    point = None
    with inference(model):
        for first in range(0, len(pairs), batch_size):
            if should_stop is not None and should_stop():
                return None
            fed = _feed(workspace, pairs[first:first + batch_size])
            if point is None:
                known = {p.name for p in list_points(model, fed.inputs)}
                point = next((p for p in query.points if p in known), None)
                if point is None:
                    raise UserError(f"this model has no activation point {query.points[0]!r}")
                stack = point.split(".", 1)[0]
            values = run_with(model, fed.inputs, read=[point]).values[point]
            activity = _activity(values, query.index, query.is_head)  # (B, T)
            rows = fed.sides[stack]
            lengths = np.array([len(r) for r in rows])
            activity = np.where(np.arange(activity.shape[1])[None] < lengths[:, None], activity, -np.inf)
            best = activity.argmax(axis=1)  # (B,)
            batch = np.arange(first, first + len(rows))
            peaks[batch] = activity[np.arange(len(rows)), best]
            where[batch] = best
            if query.is_head:
                weights = values if values.dim() == 4 else values.unsqueeze(1)  # (B, H, Tq, Tk)
                chosen = weights[np.arange(len(rows)), query.index, best]  # (B, Tk)
                # the key the activity comes from: the heaviest one but the first
                key_at[batch] = (chosen[:, 1:].argmax(dim=-1) + 1).cpu().numpy() if chosen.shape[1] > 1 else 0
            for name, ids in fed.sides.items():
                sides.setdefault(name, []).extend(ids)
            if progress is not None:
                progress(min(first + batch_size, len(pairs)), len(pairs))
    order = np.lexsort((np.arange(len(pairs)), -peaks))[:k]  # highest first, ties: earlier first
    return _found(workspace, query, point, order, peaks, where, key_at, sides, context)


def _found(workspace, query, point, order, peaks, where, key_at, sides, context) -> TopExamples:
    stack = point.split(".", 1)[0]
    keys_side = "encoder" if workspace.is_seq2seq and "cross_attn" in point else stack
    before, peak, after, keys = [], [], [], []
    for row in order:
        tokens = _side_labels(workspace, stack, sides[stack][row])
        t = int(where[row])
        before.append(" ".join(tokens[max(0, t - context):t]))
        peak.append(tokens[t])
        after.append(" ".join(tokens[t + 1:t + 1 + context]))
        keys.append(_side_labels(workspace, keys_side, sides[keys_side][row])[int(key_at[row])]
                    if query.is_head else "")
    return TopExamples(query, point, order, peaks[order], where[order], before, peak, after, keys,
                       len(peaks))


def _side_labels(workspace, side: str, ids: list[int]) -> list[str]:
    """A side's token labels in the order its points are: a seq2seq encoder that read the source
    backwards (`reverse_source`) has its positions in that order."""
    from explorer.decoding.search import labels

    if not (workspace.is_seq2seq and side == "encoder"):
        return labels(workspace.tokenizer, ids)
    tokens = labels(workspace.src_tokenizer or workspace.tokenizer, ids)
    return tokens[::-1] if getattr(workspace.model.config, "reverse_source", False) else tokens
