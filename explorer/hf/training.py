"""Fine-tuning a Hugging Face encoder-decoder (Marian, T5, BART) on (source, target) pairs.

The pairs are encoded as the model was trained on them, with its own ids and specials:

    src     = tokenizer(source)                       e.g. Marian: ▁the ▁cat </s>
    tgt_out = tokenizer(text_target=target), eos-ended   ▁die ▁katze </s>
    tgt_in  = [decoder_start_token_id] + tgt_out[:-1]    <pad> ▁die ▁katze

padded with the model's pad id (masks from the lengths, since Marian's decoder start *is* its pad).
The loss is teacher-forced cross-entropy over the target tokens, padding ignored: what
transformers computes from `labels` (padding labelled -100), so the same numbers.
"""

from __future__ import annotations

from typing import Sequence

import torch

from explorer.data.batching import IGNORE_INDEX, Batch, pad
from explorer.training.feeds import Seq2SeqFeed
from explorer.training.objectives import _output


class HFParallelDataset:
    """(source, target) pairs as the HF model's ids; sequences past its positions are cut, the
    final eos kept (`num_truncated` counts them)."""

    def __init__(self, pairs: Sequence[tuple[str, str]], src_tokenizer, tgt_tokenizer, model_config):
        self.config = model_config
        self.num_truncated = 0
        self.examples: list[tuple[list[int], list[int]]] = []
        for source, target in pairs:
            src = self._cut(src_tokenizer.encode(source), model_config.max_src_len)
            tgt = self._cut(tgt_tokenizer.encode_target(target), model_config.max_len)
            self.examples.append((src, tgt))

    def _cut(self, ids: list[int], limit: int | None) -> list[int]:
        if limit is None or len(ids) <= limit:
            return ids
        self.num_truncated += 1
        return ids[: limit - 1] + ids[-1:]  # the eos (or last token) the tokenizer ended with

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> tuple[list[int], list[int]]:
        return self.examples[index]

    def collate(self, indices: Sequence[int]) -> Batch:
        pad_id, start = self.config.pad_id, self.config.start_id
        sources = [self.examples[i][0] for i in indices]
        targets = [self.examples[i][1] for i in indices]
        src = pad(sources, pad_id)  # (B, S)
        tgt_in = pad([[start] + y[:-1] for y in targets], pad_id)  # (B, T)
        tgt_out = pad(targets, pad_id)  # (B, T)
        return Batch(src=src, src_pad_mask=_padding(sources, src.size(1)), tgt_in=tgt_in,
                     tgt_out=tgt_out, tgt_pad_mask=_padding(targets, tgt_out.size(1)))


def _padding(sequences, width: int) -> torch.Tensor:
    """(B, width) bool, True past each sequence's length."""
    lengths = torch.tensor([len(s) for s in sequences])  # (B,)
    return torch.arange(width)[None, :] >= lengths[:, None]  # (B, width)


class HFPairFeed(Seq2SeqFeed):
    """Seq2SeqFeed's shuffling and length buckets over the HF model's own encoding."""

    def make_dataset(self, pairs, workspace, max_len):
        return HFParallelDataset(pairs, workspace.src_tokenizer or workspace.tokenizer,
                                 workspace.tokenizer, workspace.model.config)


def hf_pair_loss(model, batch, label_smoothing: float = 0.0, state=None, bptt=None):
    """Teacher forcing on the target tokens; padded positions (by length) are ignored."""
    logits = model(batch.src, batch.tgt_in, batch.src_pad_mask, batch.tgt_pad_mask)  # (B, T, V)
    targets = batch.tgt_out.masked_fill(batch.tgt_pad_mask, IGNORE_INDEX)  # (B, T)
    return _output(logits, targets, IGNORE_INDEX, label_smoothing)
