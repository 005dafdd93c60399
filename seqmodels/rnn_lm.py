"""A recurrent language model: embedding -> seqmodels.RNN (any cell, stacked) -> linear over the vocabulary."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from seqmodels.config import RNNLMConfig
from seqmodels.families import ModelFamily
from seqmodels.recurrent import RNN, prefixed, to_batch_first_state, to_torch_state


class RNNLanguageModel(nn.Module):
    def __init__(self, config: RNNLMConfig):
        super().__init__()
        if config.tie_weights and config.embed_dim != config.hidden_size:
            raise ValueError(
                f"tie_weights needs embed_dim == hidden_size, got {config.embed_dim} and {config.hidden_size}"
            )
        self.config = config
        self.embedding = nn.Embedding(config.vocab_size, config.embed_dim)
        self.rnn = RNN(config.cell, config.embed_dim, config.hidden_size, config.num_layers,
                       batch_first=True, dropout=config.dropout)
        self.head = nn.Linear(config.hidden_size, config.vocab_size)
        if config.tie_weights:
            self.head.weight = self.embedding.weight  # Press & Wolf, 2017: one matrix, both ends

    def forward(
        self, tokens: Tensor, state: dict | None = None, trace: bool = False, return_state: bool = False
    ):
        """tokens (B, T) -> logits (B, T, V) [, state] [, trace]. `state` carries on from an earlier call
        (truncated BPTT, or incremental decoding): {"h": (B, L, H)} plus "c" for LSTM."""
        x = F.dropout(self.embedding(tokens), self.config.dropout, self.training)  # (B, T, E)
        result = self.rnn(x, to_torch_state(state), trace=trace)
        output, final = result[0], result[1]
        logits = self.head(F.dropout(output, self.config.dropout, self.training))  # (B, T, V)
        returned = [logits]
        if return_state:
            returned.append(to_batch_first_state(final))
        if trace:
            returned.append(prefixed(result[2], "lm."))
        return returned[0] if len(returned) == 1 else tuple(returned)

    def start(
        self, batch_size: int = 1, src: Tensor | None = None, src_pad_mask: Tensor | None = None
    ) -> dict:
        """The zero state for `batch_size` rows; a language model has no source, so `src` only sizes it."""
        if src is not None:
            batch_size = src.shape[0]
        weight = self.head.weight
        zeros = weight.new_zeros(batch_size, self.config.num_layers, self.config.hidden_size)  # (B, L, H)
        return {"h": zeros, "c": zeros.clone()} if self.config.cell == "lstm" else {"h": zeros}

    def step(self, tokens: Tensor, state: dict):
        """tokens (B,) -> logits (B, V) for the next position, the new state, and no attention."""
        logits, state = self.forward(tokens.unsqueeze(1), state, return_state=True)  # tokens: (B, 1)
        return logits.squeeze(1), state, None


MODEL_FAMILIES = (
    ModelFamily("rnn-lm", RNNLMConfig, RNNLanguageModel, presets={
        "tiny": dict(embed_dim=32, hidden_size=64, num_layers=1),
        "small": dict(embed_dim=128, hidden_size=256, num_layers=2, dropout=0.1),
    }),
)
