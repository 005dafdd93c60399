"""Cases 6 to 9 and 10, each a few lines as people write them.

6. nn.TransformerEncoder language models with a causal mask, batch_first both ways;
7. a char-level nn.LSTM language model returning (logits, hidden);
8. a forward returning an object with `.logits`, and one returning log-probabilities;
9. a model handed over in train() mode (dropout on);
10. the PyTorch word_language_model example's RNNModel: time-major `forward(input, hidden)`
    returning flattened log-probabilities, opened with `Adapter(forward=...)`.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

import explorer

CHARS = [" "] + list("abcdefgh") + ["<eos>"]


class CausalTransformerLM(nn.Module):
    def __init__(self, batch_first=True, vocab=len(CHARS), dim=16, dropout=0.0):
        super().__init__()
        self.batch_first = batch_first
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(32, dim) * 0.1)
        layer = nn.TransformerEncoderLayer(dim, 2, 32, dropout=dropout, batch_first=batch_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[: ids.shape[1]]  # (B, T, D)
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1])
        if not self.batch_first:
            x = x.transpose(0, 1)  # (T, B, D)
        x = self.encoder(x, mask=mask, is_causal=True)
        return self.head(x if self.batch_first else x.transpose(0, 1))


class CharLSTM(nn.Module):
    def __init__(self, vocab=len(CHARS), dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
        self.fc = nn.Linear(dim, vocab)

    def forward(self, x, hidden=None):
        out, hidden = self.lstm(self.embed(x), hidden)
        return self.fc(out), hidden


@dataclass
class Output:
    logits: torch.Tensor
    loss: torch.Tensor | None = None


class ObjectLM(CharLSTM):
    def forward(self, x):
        return Output(super().forward(x)[0])


class LogProbLM(CharLSTM):
    def forward(self, x):
        return F.log_softmax(super().forward(x)[0], dim=-1)


class RNNModel(nn.Module):
    """word_language_model/model.py's RNNModel, shrunk."""

    def __init__(self, ntoken=len(CHARS), ninp=16, nhid=16, nlayers=2, dropout=0.5):
        super().__init__()
        self.ntoken, self.nlayers, self.nhid = ntoken, nlayers, nhid
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        return torch.zeros(self.nlayers, bsz, self.nhid)


def rnn_model_forward(model, ids):  # ids (B, T) -> (B, T, V)
    log_probs, _ = model(ids.t(), model.init_hidden(ids.shape[0]))  # (T * B, V)
    return log_probs.view(ids.shape[1], ids.shape[0], -1).transpose(0, 1)


def build(case="transformer", seed=0):
    torch.manual_seed(seed)
    if case == "rnn_model":
        model = RNNModel()
        return model.eval(), CHARS, explorer.Adapter(kind="lm", forward=rnn_model_forward)
    model = {"transformer": lambda: CausalTransformerLM(True),
             "transformer_time_major": lambda: CausalTransformerLM(False),
             "lstm": CharLSTM, "object": ObjectLM, "logprob": LogProbLM,
             "train_mode": lambda: CausalTransformerLM(True, dropout=0.5)}[case]()
    if case == "train_mode":
        return model.train(), CHARS
    return model.eval(), CHARS, explorer.Adapter(kind="lm")


def build_lstm():
    return build("lstm")
