"""A small GPT whose attention is computed in a plain function, with exp and a sum rather than a
softmax, so that nothing the explorer attaches sees its weights (tests/usermodel/test_check.py)."""

import math

import torch
from torch import nn

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh ")


def attend(q, k, v):
    """Causal attention written out: (B, T, D) each -> (B, T, D), and the weights (B, T, T)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, T, T)
    causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    exp = (scores - scores.amax(-1, keepdim=True)).exp()
    weights = exp / exp.sum(-1, keepdim=True)
    return weights @ v, weights


class SelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x):
        return attend(self.q(x), self.k(x), self.v(x))[0]


class HiddenGPT(nn.Module):
    def __init__(self, vocab_size=len(VOCAB), dim=16, max_len=32):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.attn = SelfAttention(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))  # (B, T, D)
        return self.head(x + self.attn(x))  # (B, T, V)


def build():
    torch.manual_seed(0)
    return HiddenGPT(), VOCAB
