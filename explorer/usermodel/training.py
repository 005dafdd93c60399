"""Training a user's own model (`explorer train --model FILE.py:build`, the app's Train): the
registry's feed and data attachment of the user families (explorer/usermodel/families.py).

* A user's forward takes no padding masks, so a seq2seq batch holds sources of one length only
  (grouped by length, shuffled per epoch from the seed); targets are padded at the end, where a
  decoder that reads left to right never looks back at them, and the loss ignores those positions.
* A language model trains on random blocks of the token stream (nanoGPT), no padding at all.
* The loss is the user model's teacher-forced logits through its adapter
  (explorer.usermodel.feed.user_loss), so whatever gives the adapter those logits trains.
* Data that does not fit the model's vocabulary is one line: the task's tokens the tokenizer does
  not hold, or ids past the model's embedding.
"""

from __future__ import annotations

import dataclasses
import random

import torch

from explorer.data.batching import IGNORE_INDEX, Batch, pad
from explorer.data.tasks import PAIRS
from explorer.errors import UserError
from explorer.training.feeds import step_generator, step_seed


class UserTrainFeed:
    """Training batches of a user's model; validation as explorer.usermodel.feed.UserFeed."""

    def __init__(self, workspace, config, max_eval: int, train: bool = True) -> None:
        from explorer.usermodel.feed import UserFeed

        self.evaluation = UserFeed(workspace, config, max_eval, train)
        self.val_pairs = self.evaluation.val_pairs
        self.seed, self.batch_size = config.seed, config.batch_size
        self.seq2seq = workspace.is_seq2seq
        self.steps_per_epoch = 1
        if not train:
            return
        pairs = list(workspace.data.train)
        if not pairs:
            raise UserError("the training split is empty")
        check_fits(workspace, pairs)
        if self.seq2seq:
            self.examples = encode_pairs(workspace, pairs)  # [(src, tgt_in, tgt_out)]
            self._epoch, self._batches = -1, []
            self.steps_per_epoch = len(self._length_batches(0))
        else:
            self.stream = token_stream(workspace, pairs)  # (N,)
            limit = workspace.model.config.max_len
            self.context = min(config.context, limit) if limit else config.context
            if len(self.stream) < self.context + 1:
                raise UserError(f"the training text has {len(self.stream)} tokens, too few for one "
                                f"block of {self.context}")
            self.steps_per_epoch = max(1, (len(self.stream) - 1) // (self.batch_size * self.context))
        check_forward(workspace, self.train_batch(1))

    def _length_batches(self, epoch: int) -> list[list[int]]:
        """The epoch's batches: example indices of one source length each, in a seeded order."""
        shuffle = random.Random(step_seed(self.seed, -1 - epoch))
        groups: dict[int, list[int]] = {}
        for index, (src, _, _) in enumerate(self.examples):
            groups.setdefault(len(src), []).append(index)
        batches = []
        for length in sorted(groups):
            members = groups[length]
            shuffle.shuffle(members)
            batches += [members[i:i + self.batch_size] for i in range(0, len(members), self.batch_size)]
        shuffle.shuffle(batches)
        return batches

    def train_batch(self, step: int) -> Batch:
        if not self.seq2seq:
            generator = step_generator(self.seed, step)
            starts = torch.randint(len(self.stream) - self.context, (self.batch_size,),
                                   generator=generator)  # (B,)
            blocks = self.stream[starts[:, None] + torch.arange(self.context + 1)]  # (B, context+1)
            return Batch(tokens=blocks[:, :-1], targets=blocks[:, 1:])
        epoch, index = divmod(step - 1, self.steps_per_epoch)
        if epoch != self._epoch:
            self._epoch, self._batches = epoch, self._length_batches(epoch)
        chosen = [self.examples[i] for i in self._batches[index]]
        tgt_out = pad([t for _, _, t in chosen], IGNORE_INDEX)  # (B, T)
        return Batch(src=torch.tensor([src for src, _, _ in chosen]),  # (B, S): one length
                     tgt_in=pad([t for _, t, _ in chosen], self.pad_id),  # (B, T)
                     tgt_out=tgt_out, tgt_pad_mask=tgt_out == IGNORE_INDEX)

    @property
    def pad_id(self) -> int:
        return self.evaluation.workspace.model.config.pad_id

    def val_batches(self):
        return self.evaluation.val_batches()


def encode_pairs(workspace, pairs) -> list[tuple[list[int], list[int], list[int]]]:
    """(source ids, target input ids, target output ids) of each pair, as the probe encodes them
    (the source as the model's tokenizer gives it, the target from the model's start id)."""
    from explorer.usermodel.probe import encode

    examples = []
    for source, target in pairs:
        try:
            encoded = encode(workspace, source, target)
        except ValueError:  # an empty source or target: nothing to learn from
            continue
        src, tgt_in = encoded.inputs
        examples.append((src[0].tolist(), tgt_in[0].tolist(), encoded.targets[0].tolist()))
    if not examples:
        raise UserError("no training pair has both a source and a target")
    return examples


def token_stream(workspace, pairs) -> torch.Tensor:
    """Every text's ids, each followed by the model's end id: (N,)."""
    eos = workspace.model.config.eos_id
    stream: list[int] = []
    for text, _ in pairs:
        stream += list(workspace.tokenizer.encode(text)) + [eos]
    return torch.tensor(stream, dtype=torch.long)


def check_fits(workspace, pairs) -> None:
    """One line when the data does not fit the model: tokens its tokenizer does not hold (they
    would all be <unk>), or ids its embedding has no row for."""
    from explorer.usermodel.check import embedding_rows

    sides = [("target" if workspace.is_seq2seq else "text", workspace.tokenizer, 1)]
    if workspace.is_seq2seq:
        sides.insert(0, ("source", workspace.src_tokenizer or workspace.tokenizer, 0))
    for side, tokenizer, column in sides:
        texts = [pair[column] for pair in pairs]
        missing = unknown_pieces(tokenizer, texts)
        if missing:
            shown = " ".join(repr(p) for p in missing[:8]) + (" ..." if len(missing) > 8 else "")
            raise UserError(f"the data does not fit the model: {len(missing)} {side} token(s) are "
                            f"not in its tokenizer ({shown})")
    rows = embedding_rows(workspace.model)
    if rows is not None:
        highest = max(max(tok.encode(text), default=-1) for _, tok, col in sides
                      for text in (pair[col] for pair in pairs[:2000]))
        if highest >= rows:
            raise UserError(f"the data does not fit the model: its tokenizer gives id {highest} but "
                            f"the model's embedding has {rows} rows")


def unknown_pieces(tokenizer, texts) -> list[str]:
    """The pieces of `texts` that `tokenizer` holds no token for (a vocabulary list's tokenizer
    says which; another tokenizer's <unk> ids are counted as one '<unk>' entry)."""
    index, split = getattr(tokenizer, "index", None), getattr(tokenizer, "split", None)
    if isinstance(index, dict) and split in ("whitespace", "chars"):
        seen: dict[str, None] = {}
        for text in texts:
            for piece in (text.split() if split == "whitespace" else text):
                if piece not in index:
                    seen.setdefault(piece)
        return list(seen)
    unk = tokenizer.special_id("unk") if hasattr(tokenizer, "special_id") else None
    if unk is None:
        return []
    return ["<unk>"] if any(unk in tokenizer.encode(text) for text in texts[:2000]) else []


EVERY_POSITION = ("return them all (as nanoGPT's forward(idx, targets) does when given targets, "
                  "which the explorer passes), or give Adapter(forward=...) that does")


def check_forward(workspace, batch: Batch) -> None:
    """A first training batch through the model, without gradients: a forward that fails or
    returns logits of another shape is one line before any step runs."""
    from explorer.usermodel.check import expect_logits

    model = workspace.model
    if model.reading.last_only:  # read when it opened: no targets= to ask every position with
        raise UserError("the model's forward gives logits at the last position only; training "
                        f"needs every position: {EVERY_POSITION}")
    inputs = (batch.src[:2], batch.tgt_in[:2]) if batch.src is not None else (batch.tokens[:2],)
    device = next(iter(model.parameters()), torch.zeros(0)).device
    with torch.no_grad():
        logits = expect_logits(model, tuple(x.to(device) for x in inputs), "a training batch")
    given, length = logits.shape[1], inputs[-1].shape[1]
    if given != length:
        raise UserError(f"the model's forward gives logits at {given} of {length} positions; "
                        f"training needs every position: {EVERY_POSITION}")


def attach_data(workspace, spec):
    """The same user model with the data of `spec` to train on (the app's Data dialog, `explorer
    train --model ... --task NAME`); data of the other kind, or that does not fit, is one line."""
    from explorer.training.setup import read_data

    kind = PAIRS if workspace.is_seq2seq else "lm"
    if spec.kind != kind:
        needs = "(source, target) pairs" if kind == PAIRS else "plain text"
        raise UserError(f"your {'encoder-decoder' if kind == PAIRS else 'language model'} trains "
                        f"on {needs}, not {spec.kind} data")
    splits = read_data(spec)
    pairs = list(splits.train)
    check_fits(workspace, pairs)
    check_forward(workspace, _first_example(workspace, pairs))  # before any run folder is made
    return dataclasses.replace(workspace, data=splits, data_spec=spec, task=spec.task)


def _first_example(workspace, pairs) -> Batch:
    """A batch of one training example (an LM: its first 8 tokens), as the feed makes them."""
    if workspace.is_seq2seq:
        src, tgt_in, tgt_out = encode_pairs(workspace, pairs[:50])[0]
        return Batch(src=torch.tensor([src]), tgt_in=torch.tensor([tgt_in]),
                     tgt_out=torch.tensor([tgt_out]))
    stream = token_stream(workspace, pairs[:50])[:9]  # (≤ 9,)
    return Batch(tokens=stream[None, :-1], targets=stream[None, 1:])  # (1, ≤ 8)
