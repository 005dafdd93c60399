"""The attention scores of RNN encoder-decoders, one table: how well decoder state s matches
encoder state h_i (the lecture notes' "several ways to calculate the scores").

Each entry names its score function, the parameters it learns, a display label, its formula, a
one-line tip, and the decoding style it goes with (Bahdanau: the previous decoder state asks;
Luong: the current one). `seqmodels.alignment.Alignment`, `seqmodels.config` (which names a seq2seq may
use), the new-model dialog, the attention panel and `explorer train --help` all read this table,
so a new score is one entry here.

This module imports no torch at import time: `explorer --help` lists the scores without it. The
score functions only call tensor methods; parameter factories import torch.nn when called.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class AttentionScore:
    name: str
    label: str  # for plot titles and menus
    formula: str
    tip: str  # one line, after the course notes
    style: str  # "luong", "bahdanau", or "none" (no attention: the thought-vector bottleneck)
    # score(alignment, queries (B, Tq, Hq), keys (B, Tk, Hk)) -> unnormalised scores (B, Tq, Tk)
    function: Callable[[Any, Any, Any], Any] | None = None
    # parameters(query_size, key_size, attn_size, max_src_len) -> {attribute name: module/parameter}
    parameters: Callable[[int, int, int, int], dict[str, Any]] | None = None
    same_size: bool = False  # needs query_size == key_size (no learned map between the two)


def _no_parameters(query_size: int, key_size: int, attn_size: int, max_src_len: int) -> dict:
    return {}


def _dot(alignment, queries, keys):
    return queries @ keys.transpose(1, 2)


def _scaled_dot(alignment, queries, keys):
    return queries @ keys.transpose(1, 2) / math.sqrt(alignment.key_size)


def _general_parameters(query_size, key_size, attn_size, max_src_len):
    from torch import nn

    return {"W": nn.Linear(key_size, query_size, bias=False)}  # W h_i, then s^T (W h_i)


def _general(alignment, queries, keys):
    return queries @ alignment.W(keys).transpose(1, 2)


def _additive_parameters(query_size, key_size, attn_size, max_src_len):
    from torch import nn

    return {
        "W": nn.Linear(query_size + key_size, attn_size, bias=False),  # acts on [s; h_i]
        "v": nn.Linear(attn_size, 1, bias=False),
    }


def _additive(alignment, queries, keys):
    # W [s; h] = W_s s + W_h h: project each side once instead of every (query, key) pair.
    w_query, w_key = alignment.W.weight.split([alignment.query_size, alignment.key_size], dim=1)
    # (B, Tq, 1, A) + (B, 1, Tk, A) -> (B, Tq, Tk, A)
    projected = (queries @ w_query.T).unsqueeze(2) + (keys @ w_key.T).unsqueeze(1)
    return alignment.v(projected.tanh()).squeeze(-1)  # (B, Tq, Tk)


def _cosine_parameters(query_size, key_size, attn_size, max_src_len):
    import torch
    from torch import nn

    return {"beta": nn.Parameter(torch.ones(()))}  # key strength: sharpens the flat cosine softmax


def _unit(x, eps: float = 1e-8):
    """x / max(||x||, eps) along the last axis, as torch.nn.functional.normalize computes it."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(eps)


def _cosine(alignment, queries, keys):
    return alignment.beta * (_unit(queries) @ _unit(keys).transpose(1, 2))


def _location_parameters(query_size, key_size, attn_size, max_src_len):
    from torch import nn

    return {"W": nn.Linear(query_size, max_src_len)}  # one logit per source position


def _location(alignment, queries, keys):
    # the logits depend on the decoder state only; keep the first Tk positions
    src_len = keys.shape[1]
    if src_len > alignment.max_src_len:
        raise ValueError(
            f"location attention scores at most {alignment.max_src_len} source positions, got {src_len}"
        )
    return alignment.W(queries)[..., :src_len]  # (B, Tq, Tk)


SCORES: dict[str, AttentionScore] = {
    score.name: score
    for score in (
        AttentionScore(
            "none", "none", "(no attention)",
            "No attention: the decoder sees only the final encoder state (the bottleneck)",
            style="none",
        ),
        AttentionScore(
            "dot", "dot (Luong)", "s_tᵀ h_i",
            "Dot product: score(s_t, h_i) = s_tᵀ h_i (Luong 2015)",
            style="luong", function=_dot, parameters=_no_parameters, same_size=True,
        ),
        AttentionScore(
            "general", "general (Luong)", "s_tᵀ W_a h_i",
            "General: score(s_t, h_i) = s_tᵀ W_a h_i with a trained W_a (Luong 2015)",
            style="luong", function=_general, parameters=_general_parameters,
        ),
        AttentionScore(
            "scaled-dot", "scaled dot", "s_tᵀ h_i / √n",
            "Scaled dot product: score = s_tᵀ h_i / √n (Vaswani 2017)",
            style="luong", function=_scaled_dot, parameters=_no_parameters, same_size=True,
        ),
        AttentionScore(
            "additive", "additive (Bahdanau)", "v_aᵀ tanh(W_a [s_t; h_i])",
            "Additive: score = v_aᵀ tanh(W_a [s_t; h_i]) (Bahdanau 2015)",
            style="bahdanau", function=_additive, parameters=_additive_parameters,
        ),
        AttentionScore(
            "cosine", "cosine", "β cos(s_t, h_i)",
            "Content-based: score = cosine(s_t, h_i) (Graves 2014)",
            style="luong", function=_cosine, parameters=_cosine_parameters, same_size=True,
        ),
        AttentionScore(
            "location", "location (Luong)", "α_t = softmax(W_a s_t)",
            "Location-based: α_t = softmax(W_a s_t), from the target position alone (Luong 2015)",
            style="luong", function=_location, parameters=_location_parameters,
        ),
    )
}


def attention_score(name: str) -> AttentionScore:
    """The table entry for `name`; ValueError naming the choices otherwise."""
    if name not in SCORES:
        raise ValueError(f"unknown attention {name!r}; choose one of {', '.join(SCORES)}")
    return SCORES[name]
