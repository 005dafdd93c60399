"""A character LSTM language model (the PyTorch word_language_model example, on characters):
embedding, a two-layer nn.LSTM, a linear decoder; `forward(input, hidden=None)` returns
`(logits, hidden)`.

    explorer check --model models/lstm_lm.py:build
    explorer train --model models/lstm_lm.py:build --data input.txt --steps 500 --out runs/lstm

The explorer takes the logits from the tuple, and replays the nn.LSTM on the same weights to show
every layer's hidden state and gates.
"""

import string

import torch
from torch import nn

import explorer

VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list(string.printable[:95])


class RNNModel(nn.Module):
    def __init__(self, ntoken=len(VOCAB), ninp=64, nhid=128, nlayers=2, dropout=0.0):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden=None):
        emb = self.drop(self.encoder(input))  # (B, T, ninp)
        output, hidden = self.rnn(emb, hidden)  # (B, T, nhid)
        return self.decoder(self.drop(output)), hidden  # (B, T, V), (h, c)


def build(nhid=128, seed=0):
    torch.manual_seed(seed)
    return RNNModel(nhid=nhid), VOCAB, explorer.Adapter(split="chars")
