"""Fill-mask: a masked language model's top-k tokens at every masked position (BERT's objective).

Works on our `bert` family and on Hugging Face masked LMs (`hf-masked-lm`: BERT, DistilBERT, ...).
People write `[MASK]` (or `<mask>`); each model reads it as its own mask token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from explorer.data.tokenizers import MASK_MARKERS
from explorer.decoding.search import inference
from explorer.errors import UserError
from explorer.families import family_of


@dataclass
class FillPrediction:
    token_id: int
    token: str
    prob: float
    logprob: float
    sequence: str  # the text with this token in the masked position (other masks left out)

    def to_dict(self) -> dict:
        return {"token_id": self.token_id, "token": self.token, "prob": self.prob,
                "logprob": self.logprob, "sequence": self.sequence}


@dataclass
class MaskedPosition:
    position: int  # index into FillResult.token_ids
    predictions: list[FillPrediction]  # most probable first
    # (L, H, T): how this position attended to every token, per layer and head
    attention: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {"position": self.position, "predictions": [p.to_dict() for p in self.predictions]}


@dataclass
class FillResult:
    text: str
    token_ids: list[int]
    tokens: list[str]
    mask_token: str
    masks: list[MaskedPosition]

    def to_dict(self) -> dict:
        return {"text": self.text, "token_ids": self.token_ids, "tokens": self.tokens,
                "mask_token": self.mask_token, "masks": [m.to_dict() for m in self.masks]}


def encode_masked(workspace, text: str) -> tuple[list[int], int, str]:
    """(ids, mask id, mask token) of a text whose masks are written [MASK] or <mask>."""
    tokenizer = workspace.tokenizer
    if hasattr(tokenizer, "encode_masked"):  # a Hugging Face tokenizer knows its mask token
        if tokenizer.mask_id is None:
            raise UserError("the model's tokenizer has no mask token")
        return tokenizer.encode_masked(text), tokenizer.mask_id, tokenizer.mask_token
    from seqmodels.config import MASK_ID

    pieces = [text]
    for marker in MASK_MARKERS:
        pieces = [part for piece in pieces for part in _split_keep(piece, marker)]
    ids = []
    for piece in pieces:
        ids += [MASK_ID] if piece is None else tokenizer.encode(piece)
    return ids, MASK_ID, "<mask>"


def _split_keep(piece, marker):
    """'a [MASK] b' -> ['a ', None, ' b'] (None marks a mask); a None stays as it is."""
    if piece is None:
        return [None]
    parts = piece.split(marker)
    out = [parts[0]]
    for part in parts[1:]:
        out += [None, part]
    return [p for p in out if p != ""]


def fill_mask(workspace, text: str, top_k: int = 5) -> FillResult:
    """The `top_k` most probable tokens at every masked position of `text`, with their attention."""
    if not family_of(workspace.model).masked_lm:
        raise UserError("fill needs a masked language model (bert, or a Hugging Face BERT or "
                        f"DistilBERT); this is a {workspace.family} model")
    if top_k < 1:
        raise UserError(f"--top-k must be at least 1, got {top_k}")
    ids, mask_id, mask_token = encode_masked(workspace, text)
    positions = [i for i, token in enumerate(ids) if token == mask_id]
    if not positions:
        raise UserError("the text has no mask: write [MASK] where a token is missing")
    model, tokenizer = workspace.model, workspace.tokenizer
    device = next(model.parameters()).device
    with inference(model):
        try:
            logits, trace = model(torch.tensor([ids], device=device), trace=True)  # (1, T, V)
        except ValueError as exc:  # longer than the model's positions
            raise UserError(str(exc)) from None
    logprobs = F.log_softmax(logits[0].double(), dim=-1)  # (T, V)
    maps = [m.weights[0] for m in trace.attention]  # L x (H, T, T): a masked LM's self-attention
    masks = []
    for position in positions:
        values, best = logprobs[position].topk(min(top_k, logprobs.size(-1)))
        predictions = []
        for logprob, token_id in zip(values.tolist(), best.tolist()):
            filled = ids[:position] + [token_id] + ids[position + 1:]
            predictions.append(FillPrediction(
                token_id=token_id, token=tokenizer.tokens([token_id])[0], prob=float(np.exp(logprob)),
                logprob=logprob, sequence=tokenizer.decode([t for t in filled if t != mask_id]),
            ))
        attention = (torch.stack([m[:, position] for m in maps]).float().cpu().numpy()  # (L, H, T)
                     if maps else None)
        masks.append(MaskedPosition(position, predictions, attention))
    return FillResult(text=text, token_ids=ids, tokens=tokenizer.tokens(ids), mask_token=mask_token,
                      masks=masks)
