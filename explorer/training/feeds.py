"""Where each step's batch comes from: a pure function of (seed, step), so runs are reproducible
and a resumed run sees exactly the batches it would have seen. Each family names its feed in
explorer.families.

* Seq2SeqFeed: (source, target) pairs, shuffled per epoch and bucketed by length.
* BlockFeed (gpt, bert): random blocks of `context` tokens from the training stream (nanoGPT).
* StreamFeed (rnn-lm): the stream cut into `batch_size` parallel rows read left to right, so the
  hidden state at the end of one batch is the right start for the next.

Validation data is fixed: the same examples (and, for BERT, the same masks) at every evaluation.
"""

from __future__ import annotations

import torch
from torch import Tensor

from explorer.data.batching import Batch, LMDataset, ParallelDataset, bucketed_order, mask_tokens
from explorer.errors import SettingsError, UserError
from explorer.families import family_of


def step_seed(seed: int, step: int) -> int:
    return seed * 1_000_003 + step


def step_generator(seed: int, step: int) -> torch.Generator:
    """A CPU generator for one step's sampling, independent of everything that ran before."""
    return torch.Generator().manual_seed(step_seed(seed, step))


def _texts(pairs) -> list[str]:
    return [source for source, _ in pairs]


def model_max_len(model) -> int | None:
    """Longest sequence the model's tables can hold (positions, location attention)."""
    return family_of(model).max_len(model.config)


class Seq2SeqFeed:
    def __init__(self, workspace, config, max_eval: int, train: bool = True) -> None:
        max_len = model_max_len(workspace.model)
        self.seed, self.batch_size = config.seed, config.batch_size
        self.train = self.make_dataset(workspace.data.train if train else [], workspace, max_len)
        self.val_pairs = list(workspace.data.val)[:max_eval]
        self.val = self.make_dataset(self.val_pairs, workspace, max_len)
        if train and not len(self.train):
            raise UserError("the training split is empty")
        self.steps_per_epoch = max(1, -(-len(self.train) // self.batch_size))
        self._lengths = [len(s) + len(t) for s, t in self.train.examples]
        self._epoch, self._order = -1, []

    def make_dataset(self, pairs, workspace, max_len):
        """The pairs as ids (a Hugging Face model's feed encodes them its own way)."""
        return ParallelDataset(pairs, workspace.src_tokenizer, workspace.tokenizer, max_len)

    def train_batch(self, step: int) -> Batch:
        epoch, index = divmod(step - 1, self.steps_per_epoch)
        if epoch != self._epoch:  # a new shuffle, bucketed by length, per epoch
            order = bucketed_order(self._lengths, self.batch_size, step_seed(self.seed, -1 - epoch))
            self._epoch, self._order = epoch, order
        return self.train.collate(self._order[index])

    def val_batches(self):
        for start in range(0, len(self.val), self.batch_size):
            yield self.val.collate(range(start, min(start + self.batch_size, len(self.val))))


class BlockFeed:
    """GPT: predict every next token of a block. BERT: predict the masked 15% of a block."""

    def __init__(self, workspace, config, max_eval: int, train: bool = True) -> None:
        self.masked = family_of(workspace.model).masked_lm
        self.seed, self.batch_size, self.context = config.seed, config.batch_size, config.context
        self.mask_prob, self.vocab_size = config.mask_prob, workspace.model.config.vocab_size
        max_len = workspace.model.config.max_len
        if self.context > max_len:
            raise UserError(f"context {self.context} is longer than the model's max_len {max_len}")
        self.train = None
        self.steps_per_epoch = 1
        if train:
            self.train = _stream(workspace.tokenizer, workspace.data.train)  # (N,)
            if not self.fits(len(self.train), self.batch_size, self.context):
                raise SettingsError(f"the training text has {len(self.train)} tokens: too few "
                                    f"for one block of {self.context} tokens", ("context",))
            self.steps_per_epoch = max(1, (len(self.train) - 1) // (self.batch_size * self.context))
        try:
            self.val = LMDataset(_texts(workspace.data.val), workspace.tokenizer, self.context)
            self.val_blocks = min(len(self.val), max_eval)
        except UserError:  # validation text shorter than one block: nothing to evaluate on
            self.val, self.val_blocks = None, 0

    @staticmethod
    def fits(tokens: int, batch_size: int, context: int) -> bool:
        """Random blocks of `context` tokens, each with its next token: any batch size."""
        return tokens >= context + 1

    @classmethod
    def fitted(cls, tokens: int, batch_size: int, context: int) -> tuple[int, int]:
        """The settings nearest to these that `tokens` training tokens fit: a shorter context."""
        return batch_size, min(context, tokens - 1)

    def _batch(self, inputs: Tensor, targets: Tensor, generator: torch.Generator) -> Batch:
        if self.masked:  # BERT sees the block itself, corrupted, and predicts the chosen tokens
            inputs, targets = mask_tokens(inputs, generator, self.vocab_size, self.mask_prob)
        return Batch(tokens=inputs, targets=targets)

    def train_batch(self, step: int) -> Batch:
        generator = step_generator(self.seed, step)
        high = len(self.train) - self.context  # the last start with a next token after its block
        starts = torch.randint(high, (self.batch_size,), generator=generator)  # (B,)
        blocks = self.train[starts[:, None] + torch.arange(self.context + 1)]  # (B, context + 1)
        return self._batch(blocks[:, :-1], blocks[:, 1:], generator)

    def val_batches(self):
        generator = step_generator(self.seed, -1)  # the same masks at every evaluation
        for start in range(0, self.val_blocks, self.batch_size):
            batch = self.val.collate(range(start, min(start + self.batch_size, self.val_blocks)))
            yield self._batch(batch.tokens, batch.targets, generator)


def _stream(tokenizer, pairs) -> Tensor:
    """Every text's tokens and <eos>, concatenated: (N,), empty when there is (almost) no text."""
    try:
        return LMDataset(_texts(pairs), tokenizer, 1).stream
    except UserError:
        return torch.zeros(0, dtype=torch.long)


def batchify(stream: Tensor, rows: int) -> Tensor:
    """(N,) -> (rows, N // rows): row r of one batch continues in row r of the next."""
    length = len(stream) // rows
    return stream[: rows * length].view(rows, length)  # (rows, L)


class StreamFeed:
    """RNN LM: consecutive chunks of `context` tokens of `batch_size` parallel streams."""

    carries_state = True

    def __init__(self, workspace, config, max_eval: int, train: bool = True) -> None:
        self.context = config.context
        stream = _stream(workspace.tokenizer, workspace.data.train if train else [])
        self.train = batchify(stream, config.batch_size)  # (B, L)
        if train and not self.fits(len(stream), config.batch_size, self.context):
            raise SettingsError(f"the training text has {len(stream)} tokens: too few for "
                                f"{config.batch_size} rows of {self.context} tokens",
                                ("batch_size", "context"))
        self.steps_per_epoch = max(1, (self.train.size(1) - 1) // self.context)
        val = _stream(workspace.tokenizer, workspace.data.val)[: max_eval * self.context + 1]
        rows = max(1, min(config.batch_size, (len(val) - 1) // self.context))
        self.val = batchify(val, rows)  # (rows, L_val)

    @staticmethod
    def fits(tokens: int, batch_size: int, context: int) -> bool:
        """`batch_size` rows of more than `context` tokens each (a chunk and its next token)."""
        return tokens // batch_size > context

    @classmethod
    def fitted(cls, tokens: int, batch_size: int, context: int) -> tuple[int, int]:
        """The settings nearest to these that `tokens` training tokens fit: fewer rows of the
        same context, else one row of all the tokens."""
        rows = tokens // (context + 1)
        return (min(batch_size, rows), context) if rows else (1, tokens - 1)

    def starts_epoch(self, step: int) -> bool:
        return (step - 1) % self.steps_per_epoch == 0

    @staticmethod
    def _chunk(rows: Tensor, index: int, context: int) -> Batch:
        start = index * context
        end = min(start + context, rows.size(1) - 1)
        return Batch(tokens=rows[:, start:end], targets=rows[:, start + 1 : end + 1])  # (B, T)

    def train_batch(self, step: int) -> Batch:
        return self._chunk(self.train, (step - 1) % self.steps_per_epoch, self.context)

    def val_batches(self):
        for index in range(-(-(self.val.size(1) - 1) // self.context)):
            yield self._chunk(self.val, index, self.context)


def make_feed(workspace, config, max_eval: int | None = None, train: bool = True):
    """The feed for the workspace's family; `train=False` prepares validation data only."""
    if workspace.data is None:
        raise UserError("this model has no training data; choose a task or data files first")
    max_eval = config.eval_examples if max_eval is None else max_eval
    return family_of(workspace.model).feed(workspace, config, max_eval, train)
