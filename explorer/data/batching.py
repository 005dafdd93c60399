"""Datasets of token ids and their batches: padded, batch first, length-bucketed, seeded.

Sequence conventions (docs/architecture.md):

    seq2seq   src = x + [<eos>]    tgt_in = [<bos>] + y    tgt_out = y + [<eos>]
    LM        tokens = s[i : i + context]    targets = s[i + 1 : i + 1 + context]
    BERT      15% of the tokens are chosen; of those 80% become <mask>, 10% a random token and
              10% stay; labels are -100 where nothing is predicted.

Padding id is 0 and padding masks are True at padding.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Optional, Sequence

import torch

from explorer.data.tokenizers import BOS_ID, EOS_ID, MASK_ID, NUM_SPECIAL, PAD_ID
from explorer.errors import UserError

IGNORE_INDEX = -100  # cross_entropy's default ignore_index: positions with nothing to predict
BUCKET_BATCHES = 50  # sort by length within this many batches' worth of examples


@dataclass
class Batch:
    """One batch: seq2seq fills src..tgt_pad_mask; language models and BERT fill tokens/targets."""

    src: Optional[torch.Tensor] = None  # (B, S) long
    src_pad_mask: Optional[torch.Tensor] = None  # (B, S) bool, True = pad
    tgt_in: Optional[torch.Tensor] = None  # (B, T) long
    tgt_out: Optional[torch.Tensor] = None  # (B, T) long
    tgt_pad_mask: Optional[torch.Tensor] = None  # (B, T) bool, True = pad
    tokens: Optional[torch.Tensor] = None  # (B, T) long
    targets: Optional[torch.Tensor] = None  # (B, T) long, IGNORE_INDEX where nothing is predicted

    @property
    def size(self) -> int:
        first = self.src if self.src is not None else self.tokens
        return int(first.shape[0])

    @property
    def num_target_tokens(self) -> int:
        """Target tokens the loss is computed on (padding and ignored positions excluded)."""
        if self.tgt_pad_mask is not None:
            return int((~self.tgt_pad_mask).sum())
        return int((self.targets != IGNORE_INDEX).sum())

    def to(self, device) -> "Batch":
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return Batch(**{k: v.to(device) if v is not None else None for k, v in moved.items()})


def pad(sequences: Sequence[Sequence[int]], value: int = PAD_ID) -> torch.Tensor:
    """Right-pad lists of ids to one length: (B, T_max)."""
    longest = max((len(s) for s in sequences), default=0)
    out = torch.full((len(sequences), longest), value, dtype=torch.long)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return out


def bucketed_order(
    lengths: Sequence[int], batch_size: int, seed: int | None, bucket_batches: int = BUCKET_BATCHES
) -> list[list[int]]:
    """Example indices grouped into batches of similar length.

    With a seed: shuffle, sort by length within buckets of `bucket_batches` batches (so padding is
    small but batches still differ between epochs), cut into batches, shuffle the batches.
    Without a seed: the data's own order, cut into batches.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = list(range(len(lengths)))
    if seed is None:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    rng = random.Random(seed)
    rng.shuffle(order)
    bucket = batch_size * bucket_batches
    batches = []
    for start in range(0, len(order), bucket):
        chunk = sorted(order[start : start + bucket], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


class ParallelDataset:
    """(source, target) string pairs as token ids, ready for seq2seq batches."""

    def __init__(self, pairs: Sequence[tuple[str, str]], src_tokenizer, tgt_tokenizer,
                 max_len: int | None = None):
        self.src_tokenizer, self.tgt_tokenizer, self.max_len = src_tokenizer, tgt_tokenizer, max_len
        self.num_truncated = 0  # examples cut to max_len (reported, never silent)
        self.examples: list[tuple[list[int], list[int]]] = []
        for source, target in pairs:
            src_ids, tgt_ids = src_tokenizer.encode(source), tgt_tokenizer.encode(target)
            if max_len is not None and max(len(src_ids), len(tgt_ids)) + 1 > max_len:
                # keep room for the <eos> / <bos> each side gets
                src_ids, tgt_ids = src_ids[: max_len - 1], tgt_ids[: max_len - 1]
                self.num_truncated += 1
            self.examples.append((src_ids, tgt_ids))

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> tuple[list[int], list[int]]:
        return self.examples[index]

    def collate(self, indices: Sequence[int]) -> Batch:
        sources = [self.examples[i][0] + [EOS_ID] for i in indices]
        targets = [self.examples[i][1] for i in indices]
        src = pad(sources)  # (B, S)
        tgt_in = pad([[BOS_ID] + y for y in targets])  # (B, T)
        tgt_out = pad([y + [EOS_ID] for y in targets])  # (B, T)
        return Batch(
            src=src,
            src_pad_mask=src == PAD_ID,
            tgt_in=tgt_in,
            tgt_out=tgt_out,
            tgt_pad_mask=tgt_out == PAD_ID,
        )


class LMDataset:
    """Texts as one token stream (each text ends in <eos>), cut into blocks of `context` tokens."""

    def __init__(self, texts: Sequence[str], tokenizer, context: int):
        if context < 1:
            raise ValueError(f"context must be at least 1, got {context}")
        self.tokenizer, self.context = tokenizer, context
        stream: list[int] = []
        for text in texts:
            stream += tokenizer.encode(text) + [getattr(tokenizer, "eos_id", EOS_ID)]  # HF: its own
        self.stream = torch.tensor(stream, dtype=torch.long)  # (N,)
        if len(self.stream) < context + 1:
            raise UserError(
                f"the text has {len(self.stream)} tokens, "
                f"too few for one block of context {context}"
            )

    def __len__(self) -> int:
        """Blocks that do not overlap; the next-token target needs one more token after each."""
        return (len(self.stream) - 1) // self.context

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        start = index * self.context
        block = self.stream[start : start + self.context + 1]  # (context + 1,)
        return block[:-1], block[1:]

    def collate(self, indices: Sequence[int]) -> Batch:
        blocks = [self[i] for i in indices]
        return Batch(
            tokens=torch.stack([x for x, _ in blocks]),  # (B, context)
            targets=torch.stack([y for _, y in blocks]),  # (B, context)
        )


def mask_tokens(
    tokens: torch.Tensor,
    generator: torch.Generator | None,
    vocab_size: int,
    mask_prob: float = 0.15,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption of `tokens` (B, T) -> (inputs, labels), both (B, T).

    Special tokens (padding, <bos>, <eos>, ...) are never chosen. Of the chosen positions 80% become
    <mask>, 10% a random ordinary token and 10% stay as they are, so the model cannot assume that
    an unmasked token is always right. Labels hold the original token where chosen, else -100.
    """
    maskable = tokens >= NUM_SPECIAL  # (B, T)
    chosen = (torch.rand(tokens.shape, generator=generator) < mask_prob) & maskable
    labels = torch.where(chosen, tokens, torch.full_like(tokens, IGNORE_INDEX))
    action = torch.rand(tokens.shape, generator=generator)  # one draw decides mask/random/keep
    to_mask = chosen & (action < 0.8)
    to_random = chosen & (action >= 0.8) & (action < 0.9)
    random_tokens = torch.randint(NUM_SPECIAL, vocab_size, tokens.shape, generator=generator)
    inputs = torch.where(to_mask, torch.full_like(tokens, MASK_ID), tokens)
    inputs = torch.where(to_random, random_tokens, inputs)
    return inputs, labels
