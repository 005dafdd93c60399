"""Probe inputs of a user model, with its own special ids (the family registry's encode_probe)."""

from __future__ import annotations

import torch

from explorer.analysis.probe import Encoded, encode_next_token
from explorer.families import family_of


def encode(workspace, source: str, target: str) -> Encoded:
    """An LM: as our LMs (predict t+1). A seq2seq: the source as the tokenizer encodes it for the
    model (`encode`, ending in eos), the target teacher-forced from the model's start id."""
    config = workspace.model.config
    if not family_of(config).has_source:
        return encode_next_token(workspace, source, target)
    src_tokenizer = workspace.src_tokenizer or workspace.tokenizer
    src = list(src_tokenizer.encode(source))
    tgt = list(_target_ids(workspace.tokenizer, target, config.eos_id))
    if not src or not tgt:
        raise ValueError("the probe needs a source and a target")
    tgt_in, tgt_out = [config.start_id] + tgt[:-1], tgt
    return Encoded(
        inputs=(torch.tensor([src]), torch.tensor([tgt_in])),
        targets=torch.tensor([tgt_out]),
        labels={"source": _tokens(src_tokenizer, src), "target_in": _tokens(workspace.tokenizer, tgt_in),
                "target_out": _tokens(workspace.tokenizer, tgt_out)},
    )


def _target_ids(tokenizer, text: str, eos_id: int) -> list[int]:
    encode_target = getattr(tokenizer, "encode_target", None)
    return encode_target(text) if encode_target is not None else tokenizer.encode(text) + [eos_id]


def _tokens(tokenizer, ids: list[int]) -> list[str]:
    return [str(t) for t in tokenizer.tokens(ids)]
