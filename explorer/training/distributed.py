"""Data-parallel training under torchrun: `torchrun --nproc_per_node N -m explorer train ...`.

Every rank builds the same model from the same seed and draws the same global batch of each step
(batches are a function of (seed, step)); it keeps its own contiguous share of the rows. The loss
is weighted by tokens over all ranks, never a mean of per-rank means:

    loss = sum_r loss_sum_r / sum_r tokens_r

so each rank back-propagates `mean_r * tokens_r / total_tokens` and the gradients are *summed*
over ranks: exactly the gradient of the one-process loss on the whole batch. The summing is the
all-reduce DistributedDataParallel does, done by hand on one flat buffer per step, because the
reducer of DDP cannot follow an RNN LM's several forward passes per step (one per bptt window).

gloo on CPU, NCCL on CUDA (each rank on the GPU `LOCAL_RANK`). Rank 0 alone writes the run folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import torch
import torch.distributed as dist

from explorer.errors import UserError


@dataclass
class DataParallel:
    rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, batch):
        """This rank's rows of the global batch: (B, ...) -> (about B / world_size, ...)."""
        from explorer.data.batching import Batch

        rows = batch.size
        if rows < self.world_size:
            raise UserError(f"a batch of {rows} examples cannot be split over {self.world_size} "
                            "processes; use a larger --batch-size")
        values = {}
        for f in fields(batch):
            tensor = getattr(batch, f.name)
            values[f.name] = None if tensor is None else (
                torch.tensor_split(tensor, self.world_size, dim=0)[self.rank])
        return Batch(**values)

    def weight_by_tokens(self, output, tokens: int) -> tuple[torch.Tensor, float, int]:
        """(what this rank back-propagates, the global loss, the global token count).

        `output` is this rank's LossOutput (its mean over its predicted tokens); `tokens` the
        tokens this rank's step counts for throughput."""
        predicted = output.tokens
        local = output.loss.detach().double() * predicted if predicted else torch.zeros(
            (), dtype=torch.float64, device=output.loss.device)
        sums = torch.stack([local, torch.tensor(float(predicted), dtype=torch.float64,
                                                device=local.device),
                            torch.tensor(float(tokens), dtype=torch.float64, device=local.device)])
        dist.all_reduce(sums)  # (3,): loss sum, predicted tokens, tokens over every rank
        loss_sum, total_predicted, total_tokens = sums.tolist()
        if predicted:
            objective = output.loss * (predicted / total_predicted)
        else:  # nothing to predict in this share: a zero that still reaches every parameter
            objective = output.logits.sum() * 0.0
        return objective, loss_sum / max(total_predicted, 1.0), int(total_tokens)

    def all_reduce_gradients(self, params: list[torch.Tensor]) -> None:
        """Sum every gradient over the ranks, in one flat buffer. Every rank runs the same
        modules, so the same parameters have gradients (a parameter no rank used keeps None)."""
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return
        flat = _flatten_dense_tensors(grads)
        dist.all_reduce(flat)
        for grad, summed in zip(grads, _unflatten_dense_tensors(flat, grads)):
            grad.copy_(summed)


def init_from_env(device: str = "auto") -> DataParallel | None:
    """Join the process group torchrun describes in the environment (WORLD_SIZE > 1), or None."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return None
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if use_cuda:
        torch.cuda.set_device(local_rank)  # "cuda" then means this rank's GPU
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    where = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    return DataParallel(rank, world_size, where)


def shutdown(parallel: DataParallel | None) -> None:
    if parallel is not None and dist.is_initialized():
        dist.destroy_process_group()
