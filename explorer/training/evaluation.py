"""Validation: loss, perplexity, token accuracy, and corpus BLEU of greedy decodes for seq2seq."""

from __future__ import annotations

import math

import torch

from explorer.decoding.file_bleu import greedy_bleu
from explorer.events import EvalMetrics
from explorer.training.objectives import EvalSums, compute_loss


def resolve_device(name: str) -> torch.device:
    """`auto` picks cuda, then mps, then cpu."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        from explorer.errors import UserError

        raise UserError("device cuda was asked for, but no CUDA GPU is available")
    return torch.device(name)


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def evaluate_feed(workspace, feed, step: int, bleu_examples: int = 0, batch_size: int = 32):
    """EvalMetrics of the model on the feed's validation batches (teacher-forced, no smoothing)."""
    model = workspace.model
    device = model_device(model)
    was_training = model.training
    model.eval()
    sums = EvalSums()
    try:
        with torch.no_grad():
            state = None
            for batch in feed.val_batches():
                output = compute_loss(model, batch.to(device), state=state)
                state = output.state
                sums.add(output)
            bleu = example = None
            pairs = getattr(feed, "val_pairs", None)
            if workspace.is_seq2seq and bleu_examples and pairs:
                bleu, example = greedy_bleu(workspace, pairs[:bleu_examples], batch_size)
    finally:
        model.train(was_training)
    return EvalMetrics(
        step=step,
        val_loss=sums.loss,
        perplexity=math.exp(min(sums.loss, 700.0)) if sums.tokens else float("nan"),
        token_accuracy=sums.accuracy,
        bleu=None if bleu is None else bleu.score,
        bleu_detail=bleu,
        example=example,
    )


def evaluate(workspace, config=None, bleu_examples: int | None = None) -> EvalMetrics:
    """Evaluate a workspace as it is now, e.g. right after opening a checkpoint."""
    from explorer.training.config import TrainConfig
    from explorer.training.feeds import make_feed

    config = config or workspace.train_config or TrainConfig()
    feed = make_feed(workspace, config, train=False)
    examples = config.bleu_examples if bleu_examples is None else bleu_examples
    return evaluate_feed(workspace, feed, workspace.step, examples, config.batch_size)
