"""Training losses per model family (each family names its own in explorer.families), and the
sums an evaluation accumulates.

Every objective is a (mean) cross-entropy over the positions that are predicted:
* seq2seq / transformer: teacher forcing, `tgt_out` given `src` and `tgt_in`; padding is ignored.
* gpt / rnn-lm: the next token of a stream; an RNN LM carries its state from batch to batch and
  cuts the gradient every `bptt` tokens (truncated back-propagation through time).
* bert: the masked tokens only (labels are -100 elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from explorer.data.batching import IGNORE_INDEX  # LM and BERT positions that are not predicted
from explorer.families import family_of
from seqmodels.config import PAD_ID
from seqmodels.state import map_state


@dataclass
class LossOutput:
    loss: Tensor  # scalar: mean cross-entropy over predicted positions (what is back-propagated)
    logits: Tensor  # (B, T, V)
    targets: Tensor  # (B, T)
    ignore_index: int
    state: Any = None  # RNN LMs: the carried state, already detached

    @property
    def tokens(self) -> int:
        return int((self.targets != self.ignore_index).sum())


def detach_state(state: Any) -> Any:
    return map_state(state, lambda t: t.detach())


def _cross_entropy(logits: Tensor, targets: Tensor, ignore_index: int, smoothing: float) -> Tensor:
    vocab = logits.size(-1)
    return F.cross_entropy(
        logits.reshape(-1, vocab).float(),  # (B*T, V); fp32 so autocast cannot underflow the sum
        targets.reshape(-1),  # (B*T,)
        ignore_index=ignore_index,
        label_smoothing=smoothing,
    )


def rnn_lm_forward(model, inputs: Tensor, state: Any, bptt: int) -> tuple[Tensor, Any]:
    """Run `inputs` (B, T) in windows of `bptt` tokens, detaching the state between windows."""
    pieces = []
    for start in range(0, inputs.size(1), bptt):
        logits, state = model(inputs[:, start : start + bptt], state=state, return_state=True)
        pieces.append(logits)  # (B, bptt, V)
        state = detach_state(state)  # truncation: no gradient flows into earlier windows
    return torch.cat(pieces, dim=1), state  # (B, T, V)


def pair_loss(model, batch, label_smoothing: float = 0.0, state: Any = None,
              bptt: int | None = None) -> LossOutput:
    """seq2seq / transformer: teacher forcing, `tgt_out` given `src` and `tgt_in`; padding ignored."""
    logits = model(batch.src, batch.tgt_in, batch.src_pad_mask, batch.tgt_pad_mask)
    return _output(logits, batch.tgt_out, PAD_ID, label_smoothing)


def stream_loss(model, batch, label_smoothing: float = 0.0, state: Any = None,
                bptt: int | None = None) -> LossOutput:
    """rnn-lm: the next token of a stream, carrying `state` in and out, cut every `bptt` tokens."""
    window = bptt or batch.tokens.size(1)
    logits, state = rnn_lm_forward(model, batch.tokens, state, window)
    return _output(logits, batch.targets, IGNORE_INDEX, label_smoothing, state)


def block_loss(model, batch, label_smoothing: float = 0.0, state: Any = None,
               bptt: int | None = None) -> LossOutput:
    """gpt / bert: every target of a block of a stream (the next token, or the masked ones)."""
    logits = model(batch.tokens)  # blocks of a stream: no padding
    return _output(logits, batch.targets, IGNORE_INDEX, label_smoothing)


def _output(logits: Tensor, targets: Tensor, ignore: int, smoothing: float, state: Any = None):
    return LossOutput(_cross_entropy(logits, targets, ignore, smoothing), logits, targets, ignore, state)


def compute_loss(
    model, batch, label_smoothing: float = 0.0, state: Any = None, bptt: int | None = None
) -> LossOutput:
    """The family's training loss on `batch` (an explorer.data.batching.Batch)."""
    return family_of(model).loss(model, batch, label_smoothing, state, bptt)


@dataclass
class EvalSums:
    """Sums over a validation set: total loss, predicted tokens, correct argmax predictions."""

    loss_sum: float = 0.0
    tokens: int = 0
    correct: int = 0

    def add(self, output: LossOutput) -> None:
        predicted = output.targets != output.ignore_index  # (B, T)
        count = int(predicted.sum())
        if count == 0:
            return
        self.loss_sum += float(output.loss) * count  # unsmoothed mean -> sum
        hits = (output.logits.argmax(dim=-1) == output.targets) & predicted
        self.correct += int(hits.sum())
        self.tokens += count

    @property
    def loss(self) -> float:
        return self.loss_sum / self.tokens if self.tokens else float("nan")

    @property
    def accuracy(self) -> float:
        return self.correct / self.tokens if self.tokens else float("nan")
