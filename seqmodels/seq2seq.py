"""RNN encoder-decoder (Sutskever et al., 2014), optionally with attention (Bahdanau et al., 2015;
Luong et al., 2015).

    attention "none"      the thought-vector bottleneck: the decoder starts from the encoder's final
                          state and never looks back at the source.
    attention "additive"  Bahdanau style: the previous decoder state s_{t-1} scores the source, and the
                          context c_t is fed into the decoder RNN next to the embedding of y_{t-1}.
    any other score       Luong style: the decoder RNN runs first, its state s_t scores the source.
    With attention, the output layer reads the attentional vector tanh(W_c [c_t; s_t]).

A bidirectional encoder's final states (forward and backward concatenated, 2H) are bridged to the
decoder's H by a linear layer (tanh for h), and its outputs are projected to H to serve as attention keys.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqmodels.alignment import Alignment
from seqmodels.config import PAD_ID, Seq2SeqConfig
from seqmodels.families import ModelFamily
from seqmodels.recurrent import RNN, concat_traces, prefixed, to_batch_first_state, to_torch_state
from seqmodels.scores import SCORES
from seqmodels.trace import AttentionMap, Trace


class Seq2Seq(nn.Module):
    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config
        E, H, L = config.embed_dim, config.hidden_size, config.num_layers
        directions = 2 if config.bidirectional_encoder else 1
        self.style = SCORES[config.attention].style  # "none", "bahdanau" or "luong"
        self.src_embedding = nn.Embedding(config.src_vocab_size, E, padding_idx=PAD_ID)
        self.tgt_embedding = nn.Embedding(config.vocab_size, E, padding_idx=PAD_ID)
        self.encoder = RNN(config.cell, E, H, L, bidirectional=config.bidirectional_encoder,
                           batch_first=True, dropout=config.dropout)
        if config.bidirectional_encoder:
            self.bridge_h = nn.Linear(directions * H, H)
            if config.cell == "lstm":
                self.bridge_c = nn.Linear(directions * H, H)
        if self.style != "none":
            if config.bidirectional_encoder:
                self.memory_projection = nn.Linear(directions * H, H, bias=False)
            self.alignment = Alignment(config.attention, H, H, max_src_len=config.max_src_len)
            self.combine = nn.Linear(2 * H, H)  # W_c [c_t; s_t]
        decoder_input = E + H if self.style == "bahdanau" else E
        self.decoder = RNN(config.cell, decoder_input, H, L, batch_first=True, dropout=config.dropout)
        self.head = nn.Linear(H, config.vocab_size)

    # ---- training -------------------------------------------------------------------------------

    def forward(self, src: Tensor, tgt_in: Tensor, src_pad_mask: Tensor | None = None,
                tgt_pad_mask: Tensor | None = None, trace: bool = False):
        """src (B, Ts), tgt_in (B, Tt) -> logits (B, Tt, V) [, trace]. Padding is on the right; the
        decoder reads left to right, so target padding never reaches real positions and
        `tgt_pad_mask` is accepted for the common interface only."""
        if src_pad_mask is None:
            src_pad_mask = src.eq(PAD_ID)
        record = Trace() if trace else None
        memory, hx = self.encode(src, src_pad_mask, record)
        embedded = self.dropout(self.tgt_embedding(tgt_in))  # (B, Tt, E)
        if self.style == "bahdanau":
            features, weights, decoder_trace = self.bahdanau_decode(embedded, hx, memory, src_pad_mask, trace)
        else:
            result = self.decoder(embedded, hx, trace=trace)
            decoder_trace = result[2] if trace else None
            if self.style == "luong":
                context, weights = self.alignment(result[0], memory, src_pad_mask)  # (B, Tt, H), (B, Tt, Ts)
                features = self.attentional(context, result[0])
            else:
                features = result[0]
        logits = self.head(self.dropout(features))  # (B, Tt, V)
        if not trace:
            return logits
        prefixed(decoder_trace, "decoder.", into=record)
        if self.style != "none":
            record.attention.append(AttentionMap("cross", 0, weights.unsqueeze(1)))  # (B, 1, Tt, Ts)
        return logits, record

    # ---- incremental decoding --------------------------------------------------------------------

    def start(self, src: Tensor, src_pad_mask: Tensor | None = None) -> dict:
        """Encode once. The state holds batch-first tensors only: decoder "h" (B, L, H) [and "c"], and
        with attention the keys "memory" (B, Ts, H) and "src_pad_mask" (B, Ts)."""
        if src_pad_mask is None:
            src_pad_mask = src.eq(PAD_ID)
        memory, hx = self.encode(src, src_pad_mask, None)
        state = to_batch_first_state(hx)
        if self.style != "none":
            state.update(memory=memory, src_pad_mask=src_pad_mask)
        return state

    def step(self, tokens: Tensor, state: dict):
        """tokens (B,) = the previous target token -> logits (B, V), the new state, and the attention
        (B, 1, 1, Ts) that produced them (None without attention)."""
        embedded = self.dropout(self.tgt_embedding(tokens))  # (B, E)
        hx = to_torch_state(state)
        weights = None
        if self.style == "bahdanau":
            context, weights = self.alignment(state["h"][:, -1], state["memory"], state["src_pad_mask"])
            output, hx = self.decoder(torch.cat([embedded, context], dim=-1).unsqueeze(1), hx)  # (B, 1, H)
            features = self.attentional(context, output[:, 0])
        else:
            output, hx = self.decoder(embedded.unsqueeze(1), hx)  # (B, 1, H)
            features = output[:, 0]
            if self.style == "luong":
                context, weights = self.alignment(features, state["memory"], state["src_pad_mask"])
                features = self.attentional(context, features)
        new_state = dict(state, **to_batch_first_state(hx))
        attention = weights[:, None, None, :] if weights is not None else None  # (B, 1, 1, Ts)
        return self.head(self.dropout(features)), new_state, attention

    # ---- parts ----------------------------------------------------------------------------------

    def encode(self, src: Tensor, src_pad_mask: Tensor, record: Trace | None):
        """-> attention memory (B, Ts, H) (None without attention) and the decoder's initial state in
        torch's layout, (L, B, H) or a (h, c) pair. Encoder layers go into `record` as "encoder.*"."""
        reading_order = self.reading_order(src_pad_mask) if self.config.reverse_source else None
        if reading_order is not None:
            src = src.gather(1, reading_order)
        embedded = self.dropout(self.src_embedding(src))  # (B, Ts, E)
        result = self.encoder(embedded, pad_mask=src_pad_mask, trace=record is not None)
        outputs, final = result[0], result[1]
        if record is not None:
            prefixed(result[2], "encoder.", into=record)
        if reading_order is not None:  # back to source order, so attention weights line up with src
            outputs = outputs.gather(1, reading_order.unsqueeze(-1).expand_as(outputs))
        if isinstance(final, tuple):  # LSTM: (h_n, c_n)
            hx = (self.bridge(final[0], "h"), self.bridge(final[1], "c"))
        else:
            hx = self.bridge(final, "h")
        if self.style == "none":
            return None, hx
        memory = self.memory_projection(outputs) if self.config.bidirectional_encoder else outputs
        return memory, hx

    def bridge(self, final: Tensor, which: str) -> Tensor:
        """Encoder final states (L * D, B, H) -> decoder initial states (L, B, H); tanh keeps h in range."""
        if not self.config.bidirectional_encoder:
            return final
        L, B, H = self.config.num_layers, final.shape[1], self.config.hidden_size
        both = final.view(L, 2, B, H).permute(0, 2, 1, 3).reshape(L, B, 2 * H)  # (L, B, [fwd; bwd])
        if which == "h":
            return torch.tanh(self.bridge_h(both))
        return self.bridge_c(both)

    @staticmethod
    def reading_order(src_pad_mask: Tensor) -> Tensor:
        """Per row, the positions of the real tokens reversed, padding left in place (B, Ts).
        The permutation is its own inverse."""
        lengths = (~src_pad_mask).sum(dim=1, keepdim=True)  # (B, 1)
        positions = torch.arange(src_pad_mask.shape[1], device=src_pad_mask.device).unsqueeze(0)  # (1, Ts)
        return torch.where(positions < lengths, lengths - 1 - positions, positions)

    def bahdanau_decode(self, embedded: Tensor, hx, memory: Tensor, src_pad_mask: Tensor, trace: bool):
        """Teacher-forced decoding one step at a time, since each step's query is the previous state.
        -> features (B, Tt, H), weights (B, Tt, Ts), the decoder's trace (or None)."""
        step_traces, outputs, all_weights = [], [], []
        for t in range(embedded.shape[1]):
            query = hx[0][-1] if isinstance(hx, tuple) else hx[-1]  # s_{t-1}: top layer, (B, H)
            context, weights = self.alignment(query, memory, src_pad_mask)  # (B, H), (B, Ts)
            rnn_input = torch.cat([embedded[:, t], context], dim=-1).unsqueeze(1)  # (B, 1, E + H)
            result = self.decoder(rnn_input, hx, trace=trace)
            hx = result[1]
            outputs.append(self.attentional(context, result[0][:, 0]))
            all_weights.append(weights)
            if trace:
                step_traces.append(result[2])
        features = torch.stack(outputs, dim=1)  # (B, Tt, H)
        weights = torch.stack(all_weights, dim=1)  # (B, Tt, Ts)
        return features, weights, (concat_traces(step_traces) if trace else None)

    def attentional(self, context: Tensor, decoder_state: Tensor) -> Tensor:
        return torch.tanh(self.combine(torch.cat([context, decoder_state], dim=-1)))

    def dropout(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.config.dropout, self.training)


MODEL_FAMILIES = (
    ModelFamily("seq2seq", Seq2SeqConfig, Seq2Seq, presets={
        "tiny": dict(embed_dim=32, hidden_size=64, num_layers=1),
        "small": dict(embed_dim=128, hidden_size=256, num_layers=1, dropout=0.1),
    }),
)
