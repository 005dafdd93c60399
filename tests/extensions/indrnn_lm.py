"""A family the explorer does not ship: the IndRNN language model (Li et al., 2018), whose units
each keep one recurrent weight, h_t = act(W x_t + u ⊙ h_{t-1} + b), with |u| bounded.

This one file is the whole family: config (with a field of a new kind, `recurrent_max`, a bound
that is no probability and no size), model, and its two registry entries. `register()` adds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from explorer.families import Family, Lazy, register_family
from seqmodels.families import ModelFamily, register_model_family
from seqmodels.settings import setting
from seqmodels.trace import Trace

ACTIVATIONS = {"relu": "ReLU: the IndRNN paper's choice", "tanh": "tanh: bounded states"}


@dataclass
class IndRNNLMConfig:
    family: str = "indrnn-lm"
    vocab_size: int = setting(64, "vocabulary", "The LM's vocabulary", low=1, sized_by_data=True)
    embed_dim: int = setting(32, "embedding size", "Size of the token embeddings", low=1)
    hidden_size: int = setting(32, "hidden size", "Independent recurrent units", low=1)
    num_layers: int = setting(1, "layers", "Stacked IndRNN layers", low=1, high=8)
    dropout: float = setting(0.0, "dropout", "Probability of zeroing an activation", low=0.0,
                             high=1.0, high_open=True, advanced=True)
    recurrent_max: float = setting(2.0, "|u| bound", "Each unit's recurrent weight stays in "
                                   "[-bound, bound]", low=0.5, high=10.0)
    activation: str = setting("relu", "activation", "The units' non-linearity",
                              choices=ACTIVATIONS)


class IndRNNLanguageModel(nn.Module):
    def __init__(self, config: IndRNNLMConfig):
        super().__init__()
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.embed_dim)
        sizes = [config.embed_dim] + [config.hidden_size] * config.num_layers
        self.inputs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.recurrent = nn.ParameterList(
            nn.Parameter(torch.empty(config.hidden_size).uniform_(0, 1))
            for _ in range(config.num_layers))
        self.head = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, tokens: Tensor, state: dict | None = None, trace: bool = False,
                return_state: bool = False):
        """tokens (B, T) -> logits (B, T, V) [, state {"h": (B, L, H)}] [, trace]."""
        act = torch.relu if self.config.activation == "relu" else torch.tanh
        x = F.dropout(self.embedding(tokens), self.config.dropout, self.training)  # (B, T, E)
        h0 = self.start(tokens.shape[0])["h"] if state is None else state["h"]
        record, finals = Trace(), []
        for layer, (linear, u) in enumerate(zip(self.inputs, self.recurrent)):
            u = u.clamp(-self.config.recurrent_max, self.config.recurrent_max)
            wx, h, steps = linear(x), h0[:, layer], []  # wx (B, T, H)
            for t in range(tokens.shape[1]):
                h = act(wx[:, t] + u * h)
                steps.append(h)
            record.hidden[f"lm.l{layer}"] = steps
            finals.append(h)
            x = torch.stack(steps, dim=1)  # (B, T, H)
        logits = self.head(F.dropout(x, self.config.dropout, self.training))  # (B, T, V)
        returned = [logits]
        if return_state:
            returned.append({"h": torch.stack(finals, dim=1)})  # (B, L, H)
        if trace:
            returned.append(record)
        return returned[0] if len(returned) == 1 else tuple(returned)

    def start(self, batch_size: int = 1, src=None, src_pad_mask=None) -> dict:
        if src is not None:
            batch_size = src.shape[0]
        return {"h": self.head.weight.new_zeros(batch_size, self.config.num_layers,
                                                self.config.hidden_size)}  # (B, L, H)

    def step(self, tokens: Tensor, state: dict):
        logits, state = self.forward(tokens.unsqueeze(1), state, return_state=True)  # (B, 1)
        return logits.squeeze(1), state, None


def register() -> None:
    register_model_family(ModelFamily("indrnn-lm", IndRNNLMConfig, IndRNNLanguageModel, presets={
        "tiny": dict(embed_dim=16, hidden_size=24), "small": dict(embed_dim=64, hidden_size=128)}))
    register_family(Family(
        "indrnn-lm", "IndRNN language model: each unit keeps one bounded recurrent weight",
        has_source=False, recurrent=True, has_positions=False,
        loss=Lazy("explorer.training.objectives:stream_loss"),
        feed=Lazy("explorer.training.feeds:StreamFeed"),
        encode_probe=Lazy("explorer.analysis.probe:encode_next_token"),
        stacks={"lm": ("embedding", 0)}, embeddings={"input": "embedding", "output": "head"}))
