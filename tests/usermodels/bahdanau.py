"""Case 3: the popular tutorial's Bahdanau encoder-decoder (pytorch-seq2seq, notebook 3), shrunk:
time-major tensors, a bidirectional GRU encoder, attention computed by hand (`torch.softmax` in its
own Attention module, no masks), and `forward(src, trg, teacher_forcing_ratio)` looping in Python.
`build` hands the explorer its encode / step, batch first."""

import random

import torch
import torch.nn.functional as F
from torch import nn

import explorer

VOCAB = ["<pad>", "<sos>", "<eos>", "<unk>"] + list("abcdefgh")


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):  # src (S, B)
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)  # (S, B, 2H), (2, B, H)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        batch_size, src_len = encoder_outputs.shape[1], encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)  # (B, S)
        return F.softmax(attention, dim=1)


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs).unsqueeze(1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        weighted = torch.bmm(a, encoder_outputs).permute(1, 0, 2)
        output, hidden = self.rnn(torch.cat((embedded, weighted), dim=2), hidden.unsqueeze(0))
        embedded, output, weighted = embedded.squeeze(0), output.squeeze(0), weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        return prediction, hidden.squeeze(0)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, src, trg, teacher_forcing_ratio):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim)
        encoder_outputs, hidden = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden = self.decoder(input, hidden, encoder_outputs)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            input = trg[t] if teacher_force else output.argmax(1)
        return outputs


def encode(model, src):  # src (B, S): the explorer's batch-first ids
    outputs, hidden = model.encoder(src.t())
    return {"memory": outputs.transpose(0, 1), "hidden": hidden}  # batch first


def step(model, tokens, state):
    logits, hidden = model.decoder(tokens, state["hidden"], state["memory"].transpose(0, 1))
    return logits, {**state, "hidden": hidden}


def build(seed=0):
    torch.manual_seed(seed)
    attn = Attention(8, 8)
    model = Seq2Seq(Encoder(len(VOCAB), 8, 8, 8, 0.5), Decoder(len(VOCAB), 8, 8, 8, 0.5, attn))
    return model, VOCAB, explorer.Adapter(kind="seq2seq", encode=encode, step=step)
