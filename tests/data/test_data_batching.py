"""Batching: sequence conventions, padding masks, bucketing, LM blocks and BERT masking."""

import math
import random

import pytest
import torch

from explorer.data.batching import (
    IGNORE_INDEX,
    Batch,
    LMDataset,
    ParallelDataset,
    bucketed_order,
    mask_tokens,
)
from explorer.data.tasks import make_task
from explorer.data.tokenizers import BOS_ID, EOS_ID, MASK_ID, PAD_ID, CharTokenizer, WordTokenizer
from explorer.errors import UserError


@pytest.fixture(scope="module")
def reverse_data():
    splits = make_task("reverse", seed=3, n_train=300, n_val=0, n_test=0)
    tokenizer = CharTokenizer.train([s for s, _ in splits.train])
    return splits.train, tokenizer


def test_seq2seq_batch_follows_the_sequence_conventions():
    src_tok = WordTokenizer.train(["a b c", "d e"])
    tgt_tok = CharTokenizer.train(["xyz", "uv"])
    dataset = ParallelDataset([("a b c", "xy"), ("d", "uvz")], src_tok, tgt_tok)
    batch = dataset.collate([0, 1])
    x0, x1 = src_tok.encode("a b c"), src_tok.encode("d")
    y0, y1 = tgt_tok.encode("xy"), tgt_tok.encode("uvz")
    assert batch.src.tolist() == [x0 + [EOS_ID], x1 + [EOS_ID, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID] + y0 + [PAD_ID], [BOS_ID] + y1]
    assert batch.tgt_out.tolist() == [y0 + [EOS_ID, PAD_ID], y1 + [EOS_ID]]
    assert batch.src_pad_mask.tolist() == [[False] * 4, [False, False, True, True]]
    assert batch.tgt_pad_mask.tolist() == [[False, False, False, True], [False] * 4]
    assert batch.src.dtype == torch.long and batch.src_pad_mask.dtype == torch.bool
    assert batch.num_target_tokens == (len(y0) + 1) + (len(y1) + 1)
    assert batch.size == 2 and batch.tokens is None


def test_max_len_truncates_and_counts(reverse_data):
    pairs, tokenizer = reverse_data
    dataset = ParallelDataset(pairs, tokenizer, tokenizer, max_len=6)
    long_ones = sum(len(s) + 1 > 6 for s, _ in pairs)
    assert long_ones > 0 and dataset.num_truncated == long_ones
    batch = dataset.collate(range(len(pairs)))
    assert batch.src.shape[1] <= 6 and batch.tgt_in.shape[1] <= 6


def test_bucketed_epoch_covers_everything_once_and_pads_less(reverse_data):
    pairs, tokenizer = reverse_data
    dataset = ParallelDataset(pairs, tokenizer, tokenizer)
    lengths = [len(s) for s, _ in dataset.examples]
    order = bucketed_order(lengths, batch_size=8, seed=5, bucket_batches=10)
    assert sorted(i for batch in order for i in batch) == list(range(len(pairs)))
    assert order == bucketed_order(lengths, batch_size=8, seed=5, bucket_batches=10)
    assert order != bucketed_order(lengths, batch_size=8, seed=6, bucket_batches=10)

    def padding(batches):
        return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b)
                   for b in batches)

    rng = random.Random(5)
    shuffled = list(range(len(pairs)))
    rng.shuffle(shuffled)
    plain = [shuffled[i : i + 8] for i in range(0, len(shuffled), 8)]
    assert padding(order) < padding(plain) / 3


def test_unseeded_batches_keep_data_order_and_count_tokens(reverse_data):
    pairs, tokenizer = reverse_data
    dataset = ParallelDataset(pairs[:20], tokenizer, tokenizer)
    lengths = [len(s) + len(t) for s, t in dataset.examples]
    batches = [dataset.collate(b) for b in bucketed_order(lengths, batch_size=8, seed=None)]
    assert [b.size for b in batches] == [8, 8, 4]
    assert batches[0].src[0, : len(pairs[0][0])].tolist() == tokenizer.encode(pairs[0][0])
    assert sum(b.num_target_tokens for b in batches) == sum(len(t) + 1 for _, t in pairs[:20])


def test_lm_blocks_predict_the_next_token():
    tokenizer = CharTokenizer.train(["hello world", "abc"])
    dataset = LMDataset(["hello world", "abc"], tokenizer, context=4)
    stream = tokenizer.encode("hello world") + [EOS_ID] + tokenizer.encode("abc") + [EOS_ID]
    assert dataset.stream.tolist() == stream
    assert len(dataset) == (len(stream) - 1) // 4
    tokens, targets = dataset[1]
    assert tokens.tolist() == stream[4:8] and targets.tolist() == stream[5:9]
    batches = [dataset.collate(range(i, min(i + 2, len(dataset)))) for i in range(0, len(dataset), 2)]
    seen = sorted(tuple(row) for b in batches for row in b.tokens.tolist())
    assert seen == sorted(tuple(stream[i * 4 : i * 4 + 4]) for i in range(len(dataset)))
    assert batches[0].num_target_tokens == batches[0].targets.numel()
    with pytest.raises(UserError, match="too few"):
        LMDataset(["ab"], tokenizer, context=8)


def test_bert_masking_proportions_on_a_large_sample():
    generator = torch.Generator().manual_seed(0)
    vocab_size = 1000
    tokens = torch.randint(5, vocab_size, (400, 500), generator=generator)  # 200k ordinary tokens
    tokens[:, 0], tokens[:, -50:] = BOS_ID, PAD_ID  # specials must never be chosen
    inputs, labels = mask_tokens(tokens, generator, vocab_size)
    chosen = labels != IGNORE_INDEX
    assert not chosen[:, 0].any() and not chosen[:, -50:].any()
    assert torch.equal(labels[chosen], tokens[chosen])
    assert torch.equal(inputs[~chosen], tokens[~chosen])

    ordinary = int((tokens >= 5).sum())
    n = int(chosen.sum())

    def within(count, total, p):  # five standard deviations of a binomial
        return abs(count - total * p) < 5 * math.sqrt(total * p * (1 - p))

    assert within(n, ordinary, 0.15)
    masked = int((inputs[chosen] == MASK_ID).sum())
    unchanged = int((inputs[chosen] == tokens[chosen]).sum())
    replaced = n - masked - unchanged
    # a random replacement equals the original 1 time in 995; that counts as unchanged
    p_same = 0.1 / (vocab_size - 5)
    assert within(masked, n, 0.8)
    assert within(unchanged, n, 0.1 + p_same)
    assert within(replaced, n, 0.1 - p_same)
    assert int(inputs[chosen].min()) >= 4 and int(inputs.max()) < vocab_size


def test_masking_is_reproducible_from_the_generator():
    tokens = torch.arange(5, 105).view(4, 25)  # (B, T)
    first = mask_tokens(tokens, torch.Generator().manual_seed(7), 200)
    second = mask_tokens(tokens, torch.Generator().manual_seed(7), 200)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_batch_moves_to_a_device():
    tokens = torch.ones(2, 3, dtype=torch.long)
    batch = Batch(tokens=tokens, targets=torch.zeros_like(tokens))
    moved = batch.to("cpu")
    assert torch.equal(moved.tokens, batch.tokens) and moved.src is None
