"""The logit lens (nostalgebraist, 2020): read every layer's residual stream as if it were the last.

Each layer's residual stream x_l (the embedding, then each block's output) goes through the model's
final norm and unembedding, softmax(W_U · norm(x_l)), so a student sees the next-token prediction
form layer by layer. At the last layer this is exactly the model's own next-token distribution.

`lens_layers(readout, residuals)` is an iterator of (layer label, logits (T, V)), one layer at a
time so a 50k-token vocabulary never holds every layer's distribution at once. The residual streams
are the activation points `{stack}.hook_embed` and `{stack}.blocks.{k}.hook_resid_post`, the readout
the model's provider's (`explorer.analysis.activations.provider_for(model).readout(model)`), for
our models and Hugging Face ones alike (explorer.analysis.hidden).

`summarize_lens(layers, tokens, target_ids, tokenizer)` turns either into a `LogitLens` table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np
import torch
from torch import Tensor

from explorer.analysis.labels import layer_label


@dataclass
class LogitLens:
    """Layers x positions: the top next token read from each layer, and its probability."""

    layer_labels: list[str]  # "embed", "layer 1", ...: bottom to top (layers counted from 1)
    tokens: list[str]  # the input token at each position
    top_ids: np.ndarray  # (layers, T) int64
    top_tokens: list[list[str]]  # (layers, T)
    top_probs: np.ndarray  # (layers, T) float32
    targets: list[str] | None = None  # the token that really comes next at each position
    target_probs: np.ndarray | None = None  # (layers, T): the probability each layer gives it

    def tables(self) -> dict[str, tuple[list[str], list[list]]]:
        """CSV tables: one row per layer, one column per input token."""
        header = ["layer", *self.tokens]
        tables = {
            "lens_top_token": (header, [[label, *row] for label, row in zip(self.layer_labels, self.top_tokens)]),
            "lens_top_prob": (header, [[label, *row.tolist()] for label, row in zip(self.layer_labels, self.top_probs)]),
        }
        if self.target_probs is not None:
            rows = [[label, *row.tolist()] for label, row in zip(self.layer_labels, self.target_probs)]
            tables["lens_target_prob"] = (["layer", *(self.targets or [])], rows)
        return tables


def _target_labels(target_ids: list[int], tokenizer) -> list[str]:
    """The true next tokens; "" where there is none (a negative id: the text's last token)."""
    known = [t for t in target_ids if t >= 0]
    labels = iter(str(t) for t in tokenizer.tokens(known))
    return [next(labels) if t >= 0 else "" for t in target_ids]


def lens_layers(readout, residuals: list[Tensor]) -> Iterator[tuple[str, Tensor]]:
    """(label, logits (T, V)) of each residual stream (1, T, D) of a batch of one: "embed", then
    after each block ("layer 1", ...), read through `readout` (final norm and unembedding)."""
    for k, x in enumerate(residuals):
        yield ("embed" if k == 0 else layer_label(k - 1)), readout(x)[0]


def summarize_lens(
    layers: Iterable[tuple[str, Tensor]], tokens: list[str], target_ids: list[int] | None, tokenizer
) -> LogitLens:
    """Top token and probability per layer and position (and the probability of the true next token
    where `target_ids` gives it), from (label, logits (T, V)) pairs."""
    labels, top_ids, top_probs, target_probs = [], [], [], []
    targets = torch.tensor(target_ids) if target_ids is not None else None
    for label, logits in layers:
        probs = torch.softmax(logits.detach().float(), dim=-1)  # (T, V)
        p, index = probs.max(dim=-1)  # (T,)
        labels.append(label)
        top_ids.append(index.cpu().numpy())
        top_probs.append(p.cpu().numpy())
        if targets is not None:
            # a language model's last token has no next token (a negative id): NaN there
            known = targets >= 0
            picked = probs[torch.arange(len(targets)), targets.clamp(min=0).to(probs.device)]  # (T,)
            target_probs.append(torch.where(known.to(probs.device), picked, torch.nan).cpu().numpy())
    top_ids_array = np.stack(top_ids).astype(np.int64)
    return LogitLens(
        layer_labels=labels,
        tokens=list(tokens),
        top_ids=top_ids_array,
        top_tokens=[[str(t) for t in tokenizer.tokens(row.tolist())] for row in top_ids_array],
        top_probs=np.stack(top_probs).astype(np.float32),
        targets=_target_labels(target_ids, tokenizer) if target_ids is not None else None,
        target_probs=np.stack(target_probs).astype(np.float32) if target_probs else None,
    )
