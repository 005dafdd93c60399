"""A student's seq2seq written with plain torch.nn, the way the tutorials teach: no explorer code.

An nn.Embedding, an nn.LSTM encoder, an nn.MultiheadAttention from the decoder over the encoder's
outputs, an nn.LSTM decoder and an nn.Linear head. `build()` is what `--model FILE.py:build` calls.
"""

import torch
from torch import nn

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh")


class Homework(nn.Module):
    def __init__(self, vocab_size=len(VOCAB), dim=16, heads=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.encoder = nn.LSTM(dim, dim, batch_first=True)
        self.decoder = nn.LSTM(dim, dim, batch_first=True)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.out = nn.Linear(2 * dim, vocab_size)

    def forward(self, src, tgt_in):
        memory, state = self.encoder(self.embed(src))  # (B, S, D)
        decoded, _ = self.decoder(self.embed(tgt_in), state)  # (B, T, D)
        context, _ = self.attention(decoded, memory, memory, need_weights=False)
        return self.out(torch.cat([decoded, context], dim=-1))  # (B, T, V)


def build(seed=0):
    torch.manual_seed(seed)
    return Homework(), VOCAB
