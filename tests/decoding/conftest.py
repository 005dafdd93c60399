"""Tiny fake models with the incremental start/step protocol, small enough for brute force.

p(y_t | y_<t, x) depends only on the position t, the previous token y_{t-1} and a bias summed over
the source tokens, so every sequence's log-likelihood is a sum of table lookups.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

# tiny models: a second intra-op thread only adds contention on a shared 2-core machine
torch.set_num_threads(1)


class TableModel(nn.Module):
    def __init__(self, vocab_size=4, src_vocab_size=9, positions=12, family="seq2seq", seed=0,
                 sharpness=2.0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.config = SimpleNamespace(family=family, vocab_size=vocab_size, max_len=positions)
        # (position, previous token) -> next-token logits
        self.table = nn.Parameter(
            sharpness * torch.randn(positions, vocab_size, vocab_size, generator=generator)
        )
        self.src_embedding = nn.Parameter(torch.randn(src_vocab_size, vocab_size, generator=generator))
        self.step_calls = 0

    def _bias(self, src, src_pad_mask):
        keys = self.src_embedding[src]  # (B, S, V)
        if src_pad_mask is not None:
            keys = keys.masked_fill(src_pad_mask[..., None], 0.0)
        return keys, keys.sum(1)  # (B, S, V), (B, V)

    def start(self, src=None, src_pad_mask=None, batch_size=1):
        if src is None:
            bias = self.table.new_zeros(batch_size, self.config.vocab_size)  # (B, V)
            return {"position": torch.zeros(batch_size, dtype=torch.long), "bias": bias}
        keys, bias = self._bias(src, src_pad_mask)
        mask = torch.zeros(src.shape, dtype=torch.bool) if src_pad_mask is None else src_pad_mask
        return {"position": torch.zeros(src.size(0), dtype=torch.long), "bias": bias,
                "keys": keys, "mask": mask}

    def step(self, tokens, state):
        self.step_calls += 1
        position = state["position"]  # (B,)
        if int(position.max()) >= self.config.max_len:
            raise ValueError("past the table's positions")
        query = self.table[position, tokens]  # (B, V)
        logits = query + state["bias"]
        attn = None
        if "keys" in state:
            scores = torch.einsum("bsv,bv->bs", state["keys"], query)  # (B, S)
            scores = scores.masked_fill(state["mask"], float("-inf"))
            attn = scores.softmax(-1)[:, None, None, :]  # (B, L=1, H=1, S)
        return logits, {**state, "position": position + 1}, attn

    def forward(self, src, tgt_in=None, src_pad_mask=None, tgt_pad_mask=None, trace=False):
        if self.config.family in ("rnn-lm", "gpt"):
            tokens = src  # (B, T)
            positions = torch.arange(tokens.size(1))
            return self.table[positions[None, :], tokens]  # (B, T, V)
        _, bias = self._bias(src, src_pad_mask)
        positions = torch.arange(tgt_in.size(1))
        return self.table[positions[None, :], tgt_in] + bias[:, None, :]  # (B, T, V)


class IdTokenizer:
    """Token i is the string 't<i>'; <eos> etc. keep their usual names."""

    SPECIAL = ["<pad>", "<bos>", "<eos>", "<unk>", "<mask>"]

    def tokens(self, ids):
        return [self.SPECIAL[i] if i < 5 else f"t{i}" for i in ids]

    def decode(self, ids):
        return " ".join(self.tokens([i for i in ids if i >= 5]))

    def encode(self, text):
        return [int(word[1:]) for word in text.split()]


@pytest.fixture
def table_model():
    torch.manual_seed(0)
    return TableModel()


@pytest.fixture
def id_tokenizer():
    return IdTokenizer()
