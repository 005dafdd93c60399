"""Head importance on the validation data (Michel et al., 2019, "Are Sixteen Heads Really Better
than One?"): how much the validation loss rises, or BLEU of greedy decodes falls, when each head
alone is ablated (zeroed, or set to its mean output over the validation data: ablation_means).
The app's own evaluation (training.evaluation.evaluate_feed) is run once per head
with that head ablated in every forward pass it makes (activations.replacing), decoding steps
included.

    importance = head_importance_on_data(workspace, "bleu", examples=32, progress=..., should_stop=...)
    importance.drop       # (layers, heads): clean BLEU minus BLEU with that head zeroed
    head_importance_on_data(workspace, "loss", mode="mean")   # each head set to its mean instead
"""

from __future__ import annotations

import numpy as np

from explorer.analysis.ablation_means import validation_means
from explorer.analysis.activations import list_points, replacing
from explorer.analysis.attribution import Cancelled
from explorer.analysis.attribution_input import attribution_input
from explorer.analysis.interventions import (
    _HEADS,
    ABLATIONS,
    HeadImportance,
    heads_replacement,
    point_label,
)
from explorer.errors import UserError
from explorer.families import family_of

METRICS = {"loss": "rise in validation loss", "bleu": "drop in BLEU"}


def head_importance_on_data(workspace, metric: str = "loss", examples: int = 32, progress=None,
                            should_stop=None, mode: str = "zero") -> HeadImportance:
    """Per layer and head: the validation loss with the head ablated minus the clean loss
    ("loss"), or the clean BLEU minus the BLEU with it ablated ("bleu"); positive: the head helps.
    mode "mean" sets the head to its mean output over the validation data instead of zero."""
    from explorer.analysis.probe_input import default_probe_input
    from explorer.training.config import TrainConfig
    from explorer.training.evaluation import evaluate_feed
    from explorer.training.feeds import make_feed

    if metric not in METRICS:
        raise UserError(f"unknown importance metric {metric!r}; choose loss or bleu")
    model = workspace.model
    if metric == "bleu" and not family_of(model).has_source:
        raise UserError("BLEU needs an encoder-decoder (it translates each source): use the loss")
    if examples < 1:
        raise UserError(f"at least one validation example is needed (got {examples})")
    if mode not in ABLATIONS:
        raise UserError(f"unknown ablation {mode!r}; choose zero or mean")
    config = workspace.train_config or TrainConfig()
    feed = make_feed(workspace, config, max_eval=examples, train=False)
    item = attribution_input(workspace, *default_probe_input(workspace))
    device = next(model.parameters()).device
    points = list_points(model, tuple(t.to(device) for t in item.inputs))
    heads = [(p.name, p.shape[2]) for p in points if _HEADS.match(p.name)]
    if not heads:
        raise UserError(f"a {family_of(model).name} model has no attention heads to ablate")

    def score() -> float:
        metrics = evaluate_feed(workspace, feed, workspace.step, examples if metric == "bleu" else 0,
                                config.batch_size)
        return metrics.bleu if metric == "bleu" else metrics.val_loss

    means = validation_means(workspace, examples) if mode == "mean" else {}
    clean = score()
    drop = np.full((len(heads), max(count for _, count in heads)), np.nan)
    total, done = sum(count for _, count in heads), 0
    for layer, (name, count) in enumerate(heads):
        for head in range(count):
            if should_stop is not None and should_stop():
                raise Cancelled("head importance stopped")
            with replacing(model, {name: heads_replacement([head], means.get(name))}):
                ablated = score()
            drop[layer, head] = clean - ablated if metric == "bleu" else ablated - clean
            done += 1
            if progress is not None:
                progress(done / total)
    return HeadImportance([point_label(name[: -len(".hook_z")]) for name, _ in heads],
                          drop.shape[1], drop, mode, [name for name, _ in heads],
                          quantity=METRICS[metric])
