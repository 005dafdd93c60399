"""Case 1: an LSTM encoder-decoder with nn.MultiheadAttention over the encoder's outputs and no
masks anywhere, as most tutorial code is written: it reads <pad> as a token."""

import torch
from torch import nn

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefgh")


class Seq2Seq(nn.Module):
    def __init__(self, vocab_size=len(VOCAB), dim=16, heads=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.encoder = nn.LSTM(dim, dim, batch_first=True)
        self.decoder = nn.LSTM(dim, dim, batch_first=True)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.out = nn.Linear(2 * dim, vocab_size)

    def forward(self, src, tgt):
        memory, state = self.encoder(self.embed(src))  # (B, S, D)
        decoded, _ = self.decoder(self.embed(tgt), state)  # (B, T, D)
        context, _ = self.attention(decoded, memory, memory)
        return self.out(torch.cat([decoded, context], dim=-1))  # (B, T, V)


def build(seed=0):
    torch.manual_seed(seed)
    return Seq2Seq(), VOCAB
