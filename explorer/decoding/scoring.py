"""Teacher-forced scoring: log p(y_t | y_<t, x) of every target token, <eos> included.

Scores come from the model's training `forward`, not from the incremental `step` that the searches
use, so "a hypothesis's score equals its teacher-forced log-likelihood" checks one against the other.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from explorer.decoding.limits import check_ids, check_text
from explorer.decoding.search import inference, is_language_model, labels, special_ids
from explorer.decoding.types import ScoreResult
from explorer.errors import UserError
from explorer.events import AttentionSnapshot
from explorer.families import family_of
from seqmodels.config import EOS_ID


def encode_context(workspace, source: str | None, what: str = "the input") -> list[int]:
    """Source ids `tokens + [<eos>]` for seq2seq models; prompt ids (maybe empty) for LMs.
    A text longer than the model reads is a UserError naming `what` (explorer.decoding.limits)."""
    family = family_of(workspace.model)
    if not family.decodes:  # a masked LM has no left-to-right distribution to search or score
        raise UserError(f"a {family.name} model is a masked language model: it fills in masked "
                        "tokens (explorer fill), it does not decode or score text left to right")
    check_text(workspace.model, source, what)
    if is_language_model(workspace.model):
        ids = list(workspace.tokenizer.encode(source)) if source else []
        check_ids(workspace.model, ids, what)
        return ids
    if source is None:
        raise UserError(f"a {workspace.family} model needs a source text")
    tokenizer = workspace.src_tokenizer or workspace.tokenizer
    ids = list(tokenizer.encode(source))
    if not ids:
        raise UserError("the source text is empty after tokenization")
    # a Hugging Face tokenizer adds the model's own special tokens itself: nothing is added
    ids = ids if getattr(tokenizer, "adds_special_tokens", False) else ids + [EOS_ID]
    check_ids(workspace.model, ids, what)
    return ids


def context_labels(workspace, context: list[int]) -> list[str]:
    """Token labels of a context: the attention columns of a seq2seq model."""
    if is_language_model(workspace.model):
        return labels(workspace.tokenizer, context or [special_ids(workspace.model)[0]])
    return labels(workspace.src_tokenizer or workspace.tokenizer, context)


def score_ids(model, context: list[int], target_ids: list[int], tokenizer=None) -> ScoreResult:
    """log p of each id of `target_ids` (exactly those, add <eos> yourself) given `context`."""
    if not target_ids:
        raise ValueError("nothing to score: the target is empty")
    device = next(model.parameters()).device
    start_id = special_ids(model)[0]
    target = torch.tensor([target_ids], dtype=torch.long, device=device)  # (1, T)
    with inference(model):
        if is_language_model(model):
            prefix = list(context) if context else [start_id]
            tokens = torch.tensor([prefix + target_ids[:-1]], dtype=torch.long, device=device)
            logits = model(tokens)  # (1, P + T - 1, V)
            logits = logits[:, len(prefix) - 1 :]  # (1, T, V): the positions that predict targets
        else:
            src = torch.tensor([context], dtype=torch.long, device=device)  # (1, S)
            tgt_in = torch.tensor([[start_id] + target_ids[:-1]], dtype=torch.long, device=device)
            logits = model(src, tgt_in)  # (1, T, V)
    logprobs = F.log_softmax(logits.double(), dim=-1)  # (1, T, V)
    picked = logprobs.gather(-1, target.unsqueeze(-1)).squeeze(-1)[0]  # (T,)
    values = [float(p) for p in picked]
    return ScoreResult(tokens=labels(tokenizer, target_ids), logprobs=values, total=float(sum(values)))


def score(workspace, source: str | None, target: str) -> ScoreResult:
    """Teacher-forced log-probability of `target` (plus <eos>) given `source`.

    For language models `source` is None (the text is scored from <bos>) or a prompt to condition on.
    """
    context = encode_context(workspace, source, "the source")
    check_text(workspace.model, target, "the target")
    encode_target = getattr(workspace.tokenizer, "encode_target", None)  # HF: labels with eos
    target_ids = (encode_target(target) if encode_target is not None
                  else list(workspace.tokenizer.encode(target)) + [EOS_ID])
    check_ids(workspace.model, target_ids, "the target")
    return score_ids(workspace.model, context, target_ids, workspace.tokenizer)


def forward_attention(workspace, context: list[int], target_ids: list[int]) -> list[AttentionSnapshot]:
    """Every attention map of a teacher-forced forward pass (trace=True) over `target_ids`.

    seq2seq / transformer: "encoder" maps are source x source, "cross" maps output x source and
    "decoder" maps output x decoder input; rows are labelled by the token each position produced.
    Language models: "decoder" maps over the fed sequence (prompt and all but the last output).
    """
    model = workspace.model
    if not target_ids:
        return []
    device = next(model.parameters()).device
    start_id = special_ids(model)[0]
    output_labels = labels(workspace.tokenizer, target_ids)
    source_labels = context_labels(workspace, context)
    with inference(model):
        if is_language_model(model):
            fed = (list(context) if context else [start_id]) + target_ids[:-1]
            result = model(torch.tensor([fed], dtype=torch.long, device=device), trace=True)
            fed_labels = labels(workspace.tokenizer, fed)
            axes = {"decoder": (fed_labels, fed_labels)}
        else:
            src = torch.tensor([context], dtype=torch.long, device=device)  # (1, S)
            fed = [start_id] + target_ids[:-1]
            tgt_in = torch.tensor([fed], dtype=torch.long, device=device)  # (1, T)
            result = model(src, tgt_in, trace=True)
            axes = {
                "encoder": (source_labels, source_labels),
                "cross": (output_labels, source_labels),
                "decoder": (output_labels, labels(workspace.tokenizer, fed)),
            }
    trace = result[-1]
    snapshots = []
    for attention_map in trace.attention:
        rows, cols = axes[attention_map.kind]
        weights = attention_map.weights[0].detach().float().cpu().numpy()  # (H, Tq, Tk)
        snapshots.append(AttentionSnapshot(attention_map.kind, attention_map.layer, weights,
                                           list(rows), list(cols)))
    return snapshots
