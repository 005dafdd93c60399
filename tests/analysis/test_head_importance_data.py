"""Head importance on the validation data (explorer.analysis.head_importance_data): each head's
number equals the app's evaluation of a copy of the model whose output projection ignores that
head (its columns zeroed), for the validation loss and for BLEU of greedy decodes."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from explorer.analysis.attribution import Cancelled
from explorer.analysis.head_importance_data import head_importance_on_data
from explorer.errors import UserError
from explorer.training import DataSpec, build_workspace
from explorer.training.config import TrainConfig
from explorer.training.evaluation import evaluate_feed
from explorer.training.feeds import make_feed

EXAMPLES = 6


@pytest.fixture(scope="module")
def transformer():
    torch.manual_seed(0)
    return build_workspace(DataSpec(task="reverse", n_train=32, n_val=EXAMPLES), "transformer", seed=0,
                           d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)


def _evaluate(workspace, model):
    """The app's evaluation of `model` on the same validation examples."""
    ws = copy.copy(workspace)
    ws.model = model
    feed = make_feed(ws, TrainConfig(), max_eval=EXAMPLES, train=False)
    return evaluate_feed(ws, feed, 0, EXAMPLES, TrainConfig().batch_size)


def _without_head(model, projection, head):
    """A copy whose attention output projection reads nothing of `head`: the head zeroed."""
    model = copy.deepcopy(model)
    out = projection(model)
    size = out.weight.shape[1] // 2
    with torch.no_grad():
        out.weight[:, head * size:(head + 1) * size] = 0.0
    return model


@pytest.mark.parametrize("metric", ["loss", "bleu"])
def test_each_head_matches_the_model_with_that_head_cut_out(transformer, metric):
    progress = []
    importance = head_importance_on_data(transformer, metric, EXAMPLES, progress=progress.append)
    assert importance.drop.shape == (3, 2) and progress[-1] == 1.0
    assert np.abs(importance.drop).max() > 0  # some head matters: the reference below is no tautology
    assert importance.layers == ["encoder layer 1", "decoder layer 1", "decoder layer 1 cross"]
    clean = _evaluate(transformer, transformer.model)
    for layer, projection in [(0, lambda m: m.encoder_layers[0].self_attn.out_proj),
                              (2, lambda m: m.decoder_layers[0].multihead_attn.out_proj)]:
        for head in range(2):
            cut = _evaluate(transformer, _without_head(transformer.model, projection, head))
            expected = (cut.val_loss - clean.val_loss if metric == "loss" else clean.bleu - cut.bleu)
            assert importance.drop[layer, head] == pytest.approx(expected, abs=1e-4)


def test_stop_and_bad_requests(transformer):
    with pytest.raises(Cancelled):
        head_importance_on_data(transformer, "loss", EXAMPLES, should_stop=lambda: True)
    with pytest.raises(UserError, match="choose loss or bleu"):
        head_importance_on_data(transformer, "accuracy")


def _head_set_to(model, projection, head, mean):
    """A copy whose output projection reads the constant `mean` (Dh,) for `head`: its columns
    folded into the bias."""
    model = copy.deepcopy(model)
    out = projection(model)
    size = out.weight.shape[1] // 2
    columns = slice(head * size, (head + 1) * size)
    with torch.no_grad():
        out.bias += out.weight[:, columns] @ mean
        out.weight[:, columns] = 0.0
    return model


def test_mean_ablation_matches_the_model_with_that_head_fixed_at_its_validation_mean(transformer):
    """Mean ablation on the data: the head's output over the validation examples' positions,
    averaged by brute force (a hook on the projection), then folded into a copy's bias."""
    from explorer.analysis.attribution_input import attribution_input

    importance = head_importance_on_data(transformer, "loss", EXAMPLES, mode="mean")
    assert importance.mode == "mean"
    model = transformer.model.eval()
    projection = lambda m: m.decoder_layers[0].multihead_attn.out_proj
    seen = []
    handle = projection(model).register_forward_pre_hook(lambda _m, args: seen.append(args[0].flatten(0, 1)))
    with torch.no_grad():
        for source, target in transformer.data.val[:EXAMPLES]:
            model(*attribution_input(transformer, source, target).inputs)
    handle.remove()
    mean = torch.cat(seen).view(-1, 2, 8).mean(0)  # (H, Dh)
    clean = _evaluate(transformer, transformer.model)
    zeroed = head_importance_on_data(transformer, "loss", EXAMPLES)
    for head in range(2):
        fixed = _evaluate(transformer, _head_set_to(transformer.model, projection, head, mean[head]))
        assert importance.drop[2, head] == pytest.approx(fixed.val_loss - clean.val_loss, abs=1e-4)
    assert not np.allclose(importance.drop, zeroed.drop)
