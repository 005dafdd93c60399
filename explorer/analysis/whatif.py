"""What if: the source edited, beside the original it was pinned from (LIT's counterfactuals).

    original = whatif_side(workspace, "a man rides a horse")            # pinned once
    result = what_if(workspace, original, "a woman rides a horse")     # each edit
    result.edited.output_tokens, result.diff.edited                     # inserted/changed: True

Each side holds, as plain numpy and labels: the greedy output, its teacher-forced log-probability
(what `explorer score` gives for that output, <eos> included when the decoding finished), the
last layer's cross-attention averaged over heads (a language model's self-attention over prompt
and output), and an attribution map (gradient x input by default: cheap, one backward pass per
output token) from explorer.analysis.attribution. The diff compares the two outputs token by token
with difflib, so the view colours what the edit inserted or changed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from explorer.errors import UserError

DEFAULT_METHOD = "grad-input"
MAX_OUTPUT = 64  # greedy output tokens at most; and at most twice the source + 10, as Examples
STEPS_PER_SIDE = 4  # greedy, score, attention, attribution: progress is counted in these


@dataclass
class WhatIfSide:
    """One source and what the model makes of it."""

    source: str
    output: str  # the greedy output's text (an LM: the continuation of the source)
    output_tokens: list[str]  # its token labels, <eos> included when it finished
    output_ids: list[int]
    logprob: float  # teacher-forced log p(output | source): `explorer score` of the pair
    token_logprobs: np.ndarray  # (T_out,)
    attention: np.ndarray  # (rows, columns): mean over heads of the last layer's map
    attention_rows: list[str]
    attention_columns: list[str]
    attention_title: str  # which map: "cross-attention, layer 2, mean of 4 heads"
    attribution: np.ndarray  # (rows, columns) NaN where a column cannot influence the row
    attribution_rows: list[str]
    attribution_columns: list[str]
    method: str = DEFAULT_METHOD


@dataclass
class TokenDiff:
    """Per output token of each side, whether the edit changed it: `original[i]` is True where
    the original's token i was replaced or deleted, `edited[j]` where the edit's was inserted or
    replaced. `opcodes` are difflib's."""

    original: np.ndarray  # (T_original,) bool
    edited: np.ndarray  # (T_edited,) bool
    opcodes: list[tuple[str, int, int, int, int]]

    @property
    def unchanged(self) -> bool:
        return not self.original.any() and not self.edited.any()


@dataclass
class WhatIf:
    original: WhatIfSide
    edited: WhatIfSide
    diff: TokenDiff

    @property
    def logprob_change(self) -> float:
        return self.edited.logprob - self.original.logprob

    def table(self) -> tuple[list[str], list[list]]:
        """One row per side and output token: the CSV export."""
        return side_table([("original", self.original, self.diff.original),
                           ("edited", self.edited, self.diff.edited)])


def side_table(sides) -> tuple[list[str], list[list]]:
    """(name, WhatIfSide, changed marks) per side -> one row per output token."""
    header = ["side", "source", "position", "token", "logprob", "changed"]
    rows = []
    for name, side, marks in sides:
        for position, (token, value) in enumerate(zip(side.output_tokens, side.token_logprobs)):
            rows.append([name, side.source, position, token, float(value), bool(marks[position])])
    return header, rows


def token_diff(original: list[str], edited: list[str]) -> TokenDiff:
    """Which tokens differ between two outputs (difflib's opcodes on the token lists)."""
    matcher = difflib.SequenceMatcher(None, original, edited, autojunk=False)
    marks_a = np.zeros(len(original), dtype=bool)
    marks_b = np.zeros(len(edited), dtype=bool)
    opcodes = matcher.get_opcodes()
    for tag, a0, a1, b0, b1 in opcodes:
        if tag != "equal":
            marks_a[a0:a1] = True  # replaced or deleted
            marks_b[b0:b1] = True  # replaced or inserted
    return TokenDiff(marks_a, marks_b, opcodes)


Progress = Callable[[int, int], None]


class StepCounter:
    """Counts the steps of one computation for `progress` and stops between them."""

    def __init__(self, total: int, progress: Progress | None, should_stop: Callable[[], bool] | None):
        self.done, self.total = 0, total
        self.progress, self.should_stop = progress, should_stop

    def next(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise UserError("stopped: the pinned original is kept")
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)


def whatif_side(workspace, source: str, method: str = DEFAULT_METHOD, steps: StepCounter | None = None) -> WhatIfSide:
    """Greedy output, its log-probability, attention and attribution of one source. An empty
    source or one longer than the model reads is a UserError (one line)."""
    from explorer.analysis.attribution import AttributionSettings, attribute
    from explorer.decoding.incremental import inference, is_language_model
    from explorer.decoding.scoring import encode_context, forward_attention, score_ids
    from explorer.decoding.search import greedy

    steps = steps or StepCounter(STEPS_PER_SIDE, None, None)
    if not source.strip():
        raise UserError("the source is empty: type a source to compare with the original")
    model, tokenizer = workspace.model, workspace.tokenizer
    context = encode_context(workspace, source, "the source")
    with inference(model):
        hypothesis = greedy(model, context, max_len=min(MAX_OUTPUT, 2 * len(context) + 10),
                            tokenizer=tokenizer)
    steps.next()
    if not hypothesis.token_ids:
        raise UserError("the model's output is empty: nothing to compare")
    scored = score_ids(model, context, hypothesis.token_ids, tokenizer)
    steps.next()
    maps = forward_attention(workspace, context, hypothesis.token_ids)
    attention, rows, columns, title = _last_map(maps, "decoder" if is_language_model(model) else "cross")
    steps.next()
    lm = is_language_model(model)
    # an LM explains the whole text, prompt and continuation; an encoder-decoder its output
    text = tokenizer.decode(context + _without_eos(hypothesis)) if lm else source
    explained = attribute(workspace, text, "" if lm else hypothesis.text, AttributionSettings(method=method))
    steps.next()
    return WhatIfSide(
        source=source, output=hypothesis.text, output_tokens=list(scored.tokens),
        output_ids=list(hypothesis.token_ids), logprob=scored.total,
        token_logprobs=np.asarray(scored.logprobs, dtype=np.float64),
        attention=attention, attention_rows=rows, attention_columns=columns, attention_title=title,
        attribution=np.asarray(explained.scores, dtype=np.float64),
        attribution_rows=list(explained.rows), attribution_columns=list(explained.columns),
        method=method,
    )


def _without_eos(hypothesis) -> list[int]:
    return list(hypothesis.token_ids[:-1] if hypothesis.finished else hypothesis.token_ids)


def _last_map(maps, kind: str) -> tuple[np.ndarray, list[str], list[str], str]:
    """The last layer's map of `kind`, averaged over heads; an empty map when the model has none."""
    from explorer.analysis.labels import layer_label

    chosen = [m for m in maps if m.kind == kind]
    if not chosen:
        return np.zeros((0, 0)), [], [], "no attention in this model"
    last = max(chosen, key=lambda m: m.layer)
    heads = last.weights.shape[0]
    name = "cross-attention" if kind == "cross" else "self-attention"
    title = f"{name}, {layer_label(last.layer)}" + (f", mean of {heads} heads" if heads > 1 else "")
    return last.weights.mean(axis=0), list(last.rows), list(last.cols), title  # (Tq, Tk)


def what_if(workspace, original: WhatIfSide | str, edited: str, method: str = DEFAULT_METHOD,
            progress: Progress | None = None, should_stop: Callable[[], bool] | None = None) -> WhatIf:
    """The edit beside the original (computed here when given as a source text), with the
    outputs' token diff. `progress(done, total)` after each step; `should_stop` stops between."""
    total = STEPS_PER_SIDE * (1 if isinstance(original, WhatIfSide) else 2)
    steps = StepCounter(total, progress, should_stop)
    if not isinstance(original, WhatIfSide):
        original = whatif_side(workspace, original, method, steps)
    side = whatif_side(workspace, edited, method, steps)
    return WhatIf(original, side, token_diff(original.output_tokens, side.output_tokens))
