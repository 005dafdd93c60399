"""The PyTorch seq2seq tutorial's GRU encoder and attention decoder, as in the README's "Your own
PyTorch model": a character-level encoder-decoder for the built-in tasks (reverse, sort, copy,
dates, ...) or your own pairs.

    explorer check --model models/gru_translator.py:build
    explorer train --model models/gru_translator.py:build --task reverse --steps 500 --out runs/gru

The explorer reads `forward(src, tgt_in)` as an encoder-decoder (two inputs) and records the
nn.MultiheadAttention's weights and both GRUs' hidden states without any change here.
"""

import string

import torch
from torch import nn

import explorer

# ids 0-3 are the special tokens the explorer finds by name; then one token per character
VOCAB = ["<pad>", "<bos>", "<eos>", "<unk>"] + list(string.ascii_lowercase + string.digits + " -+,.")


class EncoderRNN(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, src):
        return self.gru(self.embedding(src))  # outputs (B, S, H), hidden (1, B, H)


class AttnDecoderRNN(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.attention = nn.MultiheadAttention(hidden, num_heads=1, batch_first=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, tgt_in, memory, hidden):
        outputs = []
        for t in range(tgt_in.shape[1]):  # one step at a time, as in the tutorial
            query = hidden.transpose(0, 1)  # (B, 1, H): the previous decoder state
            context, _ = self.attention(query, memory, memory)  # (B, 1, H)
            step_in = torch.cat([self.embedding(tgt_in[:, t : t + 1]), context], dim=-1)
            output, hidden = self.gru(step_in, hidden)
            outputs.append(self.out(output))
        return torch.cat(outputs, dim=1)  # (B, T, V)


class Translator(nn.Module):
    def __init__(self, vocab_size=len(VOCAB), hidden=64):
        super().__init__()
        self.encoder = EncoderRNN(vocab_size, hidden)
        self.decoder = AttnDecoderRNN(vocab_size, hidden)

    def forward(self, src, tgt_in):  # logits = model(src_ids, tgt_in_ids)
        memory, hidden = self.encoder(src)
        return self.decoder(tgt_in, memory, hidden)


def build(hidden=64, seed=0):
    torch.manual_seed(seed)
    # a list of single characters: split="chars" reads "abc" as a, b, c (and " " as a token)
    return Translator(hidden=hidden), VOCAB, explorer.Adapter(split="chars")
