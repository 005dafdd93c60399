"""The data-parallel loss is weighted by tokens over the ranks: with shards of very different
lengths it equals the one-process loss and gradient on the whole batch, where a mean of the
per-rank means does not. Both ranks run here in one process; the all-reduce is a sum."""

import pytest
import torch

from explorer.training import distributed
from explorer.training.distributed import DataParallel
from explorer.training.objectives import compute_loss
from explorer.training import DataSpec, TrainConfig, build_workspace
from explorer.training.feeds import make_feed


def test_token_weighted_loss_and_summed_gradients_equal_the_whole_batch(monkeypatch):
    workspace = build_workspace(DataSpec(task="copy", n_train=256, n_val=32), "seq2seq",
                                embed_dim=16, hidden_size=32, dropout=0.0)
    model = workspace.model

    feed = make_feed(workspace, TrainConfig(batch_size=8, device="cpu"))
    lengths = sorted(range(len(feed.train)), key=lambda i: len(feed.train.examples[i][0]))
    # rank 0 gets the 4 shortest examples, rank 1 the 4 longest: very different token counts
    batch = feed.train.collate(lengths[:4] + lengths[-4:])

    whole = compute_loss(model, batch)
    whole.loss.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()

    ranks = [DataParallel(rank, 2, torch.device("cpu")) for rank in range(2)]
    outputs = [compute_loss(model, r.shard(batch)) for r in ranks]
    assert outputs[0].tokens * 2 < outputs[1].tokens
    contributions = []

    def all_reduce(tensor):  # rank r's values plus the other rank's, recorded in a first pass
        contributions.append(tensor.clone())
        if len(contributions) == 2:
            total = contributions[0] + contributions[1]
            results.append(total)

    results = []
    monkeypatch.setattr(distributed.dist, "all_reduce", all_reduce)
    for rank, output in zip(ranks, outputs):  # first pass: each rank's (sum, count, tokens)
        rank.weight_by_tokens(output, 10)
    total = results[0]

    monkeypatch.setattr(distributed.dist, "all_reduce", lambda tensor: tensor.copy_(total))
    losses = []
    for rank, output in zip(ranks, outputs):
        objective, loss, tokens = rank.weight_by_tokens(output, 10)
        objective.backward()  # the gradients add up, as the all-reduce of gradients sums them
        losses.append(loss)
        assert tokens == 20
    assert losses[0] == losses[1] == pytest.approx(whole.loss.item(), rel=1e-6)
    for p, grad in zip(model.parameters(), expected):
        torch.testing.assert_close(p.grad, grad, rtol=1e-5, atol=1e-7)

    mean_of_means = (outputs[0].loss.item() + outputs[1].loss.item()) / 2
    assert abs(mean_of_means - whole.loss.item()) > 1e-3 * whole.loss.item()
