"""Models a user gets wrong, each in its own build function (tests/usermodel/test_cli_model_everywhere.py)."""

import torch
from torch import nn

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh")


class LastOnly(nn.Module):
    """Returns (B, V): the last position's logits with the time axis dropped."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(len(VOCAB), 8)
        self.out = nn.Linear(8, len(VOCAB))

    def forward(self, ids):
        return self.out(self.embed(ids))[:, -1]  # (B, V)


class LastPosition(LastOnly):
    """nanoGPT at inference: logits (B, 1, V) of the last position only."""

    def forward(self, ids):
        return self.out(self.embed(ids))[:, -1:]  # (B, 1, V)


class Small(nn.Module):
    def __init__(self, rows):
        super().__init__()
        self.embed = nn.Embedding(rows, 8)
        self.out = nn.Linear(8, len(VOCAB))

    def forward(self, ids):
        return self.out(self.embed(ids))  # (B, T, V)


def wrong_shape():
    return LastOnly(), VOCAB


def last_position():
    return LastPosition(), VOCAB


def small_embedding():
    return Small(rows=5), VOCAB  # the tokenizer has 12 tokens, the embedding 5 rows


def wrong_types():
    return "a model", 42, {"kind": "lm"}


def right():
    torch.manual_seed(0)
    return Small(rows=len(VOCAB)), VOCAB
