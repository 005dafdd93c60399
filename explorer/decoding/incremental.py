"""Driving a model through its incremental API, shared by every decoding strategy and scoring.

    state = model.start(src, src_pad_mask)        # LMs: model.start(batch_size=B)
    logits, state, attn = model.step(tokens, state)

`begin` encodes a batch of contexts (or feeds the prompts) and returns the first output
distribution; `advance_model` feeds one token per row. Log-probabilities come back in float64
and attention as numpy, ready for the Python bookkeeping in explorer.decoding.search.
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
import torch.nn.functional as F

from explorer.families import family_of
from explorer.readers import reading
from seqmodels.config import BOS_ID, EOS_ID, PAD_ID

@contextlib.contextmanager
def inference(model):
    """No gradients and no dropout, on whole weights (explorer.readers: training in another thread
    waits); the model's training flag is restored afterwards."""
    with reading(model), torch.no_grad():
        yield


def is_language_model(model) -> bool:
    """Decodes by continuing a prompt (no source to encode)."""
    return family_of(model).is_lm


def special_ids(model) -> tuple[int, int, int]:
    """(start, eos, pad) ids: a Hugging Face model's own (its config says them), else the shared
    <bos> <eos> <pad>. start is what an output starts from: an encoder-decoder's decoder start,
    an LM's empty prompt."""
    config = model.config
    return (getattr(config, "start_id", BOS_ID), getattr(config, "eos_id", EOS_ID),
            getattr(config, "pad_id", PAD_ID))


def effective_max_len(model, context: list[int], max_len: int) -> int:
    """Positions hold an LM's prompt plus all outputs but the last, or <bos> plus all but the last."""
    family = family_of(model)
    positions = family.max_len(model.config) if family.has_positions else None  # None: no bound
    if positions is not None and family.is_lm:
        prompt_len = max(len(context), 1)
        max_len = min(max_len, positions - prompt_len + 1)
    elif positions is not None:
        max_len = min(max_len, positions)
    if max_len < 1:
        raise ValueError(f"the prompt leaves no room to generate (model max_len {model.config.max_len})")
    return max_len


def begin(model, contexts: list[list[int]]):
    """Encode the sources (or feed the prompts) of a batch.

    Returns (state, logprobs (B, V) float64 of the first output token, attn (B, L, H, Tk) numpy or None).
    """
    device = next(model.parameters()).device
    batch = len(contexts)
    start_id, _, pad_id = special_ids(model)
    if is_language_model(model):
        prompts = [list(c) if len(c) else [start_id] for c in contexts]
        if len({len(p) for p in prompts}) != 1:
            raise ValueError("a batch of prompts must have equal lengths")
        prompt = torch.tensor(prompts, dtype=torch.long, device=device)  # (B, P)
        state = model.start(batch_size=batch)
        if hasattr(model, "prefill"):  # the whole prompt in one forward pass (Hugging Face models)
            logits, state, attn = model.prefill(prompt, state)
        else:
            for position in range(prompt.size(1)):
                logits, state, attn = model.step(prompt[:, position], state)
    else:
        longest = max(len(c) for c in contexts)
        src = torch.full((batch, longest), pad_id, dtype=torch.long, device=device)  # (B, S)
        for row, ids in enumerate(contexts):
            src[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        lengths = torch.tensor([len(c) for c in contexts], device=device)  # (B,)
        src_pad_mask = torch.arange(longest, device=device)[None, :] >= lengths[:, None]  # (B, S)
        state = model.start(src=src, src_pad_mask=src_pad_mask)
        bos = torch.full((batch,), start_id, dtype=torch.long, device=device)  # (B,)
        logits, state, attn = model.step(bos, state)
    return state, _logprobs(logits), _attention(attn)


def advance_model(model, state, tokens: list[int]):
    """Feed one token per row; returns (state, logprobs (B, V) float64, attn numpy or None)."""
    device = next(model.parameters()).device
    logits, state, attn = model.step(torch.tensor(tokens, dtype=torch.long, device=device), state)
    return state, _logprobs(logits), _attention(attn)


def _logprobs(logits: torch.Tensor) -> torch.Tensor:
    return F.log_softmax(logits.double(), dim=-1)  # float64 so that scores add up exactly


def _attention(attn) -> np.ndarray | None:
    return None if attn is None else attn.detach().float().cpu().numpy()  # (B, L, H, Tk)


def attention_row(attn: np.ndarray | None, row: int, context_len: int) -> np.ndarray | None:
    """One row's (L, H, Tk) attention, cut to its own source length (the batch pads sources)."""
    if attn is None:
        return None
    return attn[row, :, :, :context_len]
