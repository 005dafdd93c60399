"""Transformer encoder-decoder (Vaswani et al. 2017), decoder-only GPT and encoder-only BERT.

All three are built from a `seqmodels.config.TransformerConfig` and share the blocks of
`seqmodels.transformer_blocks`; GPT and BERT share one trunk. With trace=True a forward pass also
returns a `seqmodels.Trace` holding every attention map (B, H, Tq, Tk) and each block's output, still
in the autograd graph.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from seqmodels.config import TransformerConfig
from seqmodels.families import ModelFamily
from seqmodels.trace import AttentionMap, Trace
from seqmodels.transformer_blocks import DecoderLayer, Embedding, EncoderLayer, final_norm, make_rope


def _record(trace: Trace | None, kind: str, layer: int, weights: Tensor | None, x: Tensor):
    """Keep a block's self-attention map and its output (B, T, D), named "encoder.layer0" etc."""
    if trace is not None:
        trace.attention.append(AttentionMap(kind=kind, layer=layer, weights=weights))
        trace.hidden[f"{kind}.layer{layer}"] = [x]


def _position(state: dict, max_len: int) -> int:
    position = int(state["position"][0])  # every row of a batch is at the same step
    if position >= max_len:
        raise ValueError(f"cannot decode position {position}: the model's max_len is {max_len}")
    return position


def _output_head(config: TransformerConfig, embedding: Embedding) -> nn.Linear:
    head = nn.Linear(config.d_model, config.vocab_size, bias=False)
    if config.tie_weights:
        head.weight = embedding.token.weight  # one tensor: the input and output embedding
    return head


class Transformer(nn.Module):
    """Encoder-decoder: forward(src, tgt_in, src_pad_mask=None, tgt_pad_mask=None, trace=False)."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.src_embed = Embedding(config.src_vocab_size, config)
        self.tgt_embed = Embedding(config.vocab_size, config)
        self.rope = make_rope(config)
        self.encoder_layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_layers))
        self.encoder_norm = final_norm(config)
        self.decoder_norm = final_norm(config)
        self.lm_head = _output_head(config, self.tgt_embed)

    def encode(self, src: Tensor, src_pad_mask: Tensor | None = None, trace: Trace | None = None):
        """src (B, Ts) -> memory (B, Ts, D)."""
        x = self.src_embed(src)
        for k, layer in enumerate(self.encoder_layers):
            x, weights = layer(x, src_pad_mask, rope=self.rope, need_weights=trace is not None)
            _record(trace, "encoder", k, weights, x)
        return self.encoder_norm(x)

    def decode(
        self,
        tgt_in: Tensor,
        memory: Tensor,
        src_pad_mask: Tensor | None = None,
        tgt_pad_mask: Tensor | None = None,
        trace: Trace | None = None,
    ) -> Tensor:
        """tgt_in (B, T), memory (B, Ts, D) -> logits (B, T, V)."""
        x = self.tgt_embed(tgt_in)
        for k, layer in enumerate(self.decoder_layers):
            x, self_weights, cross_weights = layer(
                x, memory, tgt_pad_mask, src_pad_mask, rope=self.rope, need_weights=trace is not None
            )
            _record(trace, "decoder", k, self_weights, x)
            if trace is not None:
                trace.attention.append(AttentionMap(kind="cross", layer=k, weights=cross_weights))
        return self.lm_head(self.decoder_norm(x))

    def forward(self, src, tgt_in, src_pad_mask=None, tgt_pad_mask=None, trace: bool = False):
        record = Trace() if trace else None
        memory = self.encode(src, src_pad_mask, record)
        logits = self.decode(tgt_in, memory, src_pad_mask, tgt_pad_mask, record)  # (B, T, V)
        return (logits, record) if trace else logits

    @torch.no_grad()
    def start(self, src: Tensor, src_pad_mask: Tensor | None = None) -> dict:
        """Encode once; the state caches every decoder layer's cross-attention keys and values.

        State: {"position": (B,) next target position, "src_pad_mask": (B, Ts),
                "layers": [{"self": {"k", "v"} (B, H, t, Dh), "cross": {"k", "v"} (B, H, Ts, Dh)}, ...]}
        """
        memory = self.encode(src, src_pad_mask)  # (B, Ts, D)
        batch = src.size(0)
        if src_pad_mask is None:
            src_pad_mask = torch.zeros(src.shape, dtype=torch.bool, device=src.device)
        heads, head_dim = self.config.num_heads, self.config.d_model // self.config.num_heads
        empty = memory.new_zeros(batch, heads, 0, head_dim)  # (B, H, 0, Dh): nothing decoded yet
        layers = [
            {"self": {"k": empty, "v": empty}, "cross": layer.multihead_attn.project_kv(memory)}
            for layer in self.decoder_layers
        ]
        position = torch.zeros(batch, dtype=torch.long, device=src.device)
        return {"position": position, "src_pad_mask": src_pad_mask, "layers": layers}

    @torch.no_grad()
    def step(self, tokens: Tensor, state: dict) -> tuple[Tensor, dict, Tensor]:
        """Feed the previous token (B,) -> next-token logits (B, V), the new state, and the
        cross-attention (B, L, H, Ts) of every layer and head at this position."""
        position = _position(state, self.config.max_len)
        x = self.tgt_embed(tokens.unsqueeze(1), offset=position)  # (B, 1, D)
        layers, cross_maps = [], []
        for layer, cache in zip(self.decoder_layers, state["layers"]):
            self_cache = dict(cache["self"])  # a copy: the caller's state is left as it was
            x, _, cross_weights = layer(
                x, None, memory_pad_mask=state["src_pad_mask"], rope=self.rope, need_weights=True,
                self_cache=self_cache, cross_cache=cache["cross"],
            )
            layers.append({"self": self_cache, "cross": cache["cross"]})
            cross_maps.append(cross_weights[:, :, 0])  # (B, H, Ts)
        logits = self.lm_head(self.decoder_norm(x))[:, 0]  # (B, V)
        new_state = dict(state, position=state["position"] + 1, layers=layers)
        return logits, new_state, torch.stack(cross_maps, dim=1)  # attention (B, L, H, Ts)


class _SelfAttentionStack(nn.Module):
    """The trunk GPT and BERT share: embedding, blocks of self-attention (GELU feed-forward), and
    the final norm. `causal` makes it a decoder (GPT), else an encoder (BERT)."""

    causal = False
    trace_kind = "encoder"  # what the attention maps and hidden states are called in a trace

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = config
        self.embed = Embedding(config.vocab_size, config)
        self.rope = make_rope(config)
        self.layers = nn.ModuleList(EncoderLayer(config, F.gelu) for _ in range(config.num_layers))
        self.final_norm = final_norm(config)

    def trunk(self, tokens: Tensor, pad_mask: Tensor | None, record: Trace | None) -> Tensor:
        """tokens (B, T) -> the normalised output of the last block (B, T, D)."""
        x = self.embed(tokens)  # (B, T, D)
        for k, layer in enumerate(self.layers):
            x, weights = layer(
                x, pad_mask, is_causal=self.causal, rope=self.rope, need_weights=record is not None
            )
            _record(record, self.trace_kind, k, weights, x)
        return self.final_norm(x)


class GPT(_SelfAttentionStack):
    """Decoder-only language model (causal self-attention): forward(tokens, pad_mask=None, trace=False)."""

    causal = True
    trace_kind = "decoder"

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        self.lm_head = _output_head(config, self.embed)

    def forward(self, tokens: Tensor, pad_mask: Tensor | None = None, trace: bool = False):
        record = Trace() if trace else None
        logits = self.lm_head(self.trunk(tokens, pad_mask, record))  # (B, T, V)
        return (logits, record) if trace else logits

    @torch.no_grad()
    def start(self, src: Tensor | None = None, src_pad_mask: Tensor | None = None, batch_size: int = 1):
        """An empty cache. State: {"position": (B,), "layers": [{"k", "v"} (B, H, t, Dh), ...]}."""
        if src is not None:
            raise ValueError("a GPT has no source; feed the prompt through step()")
        device = self.lm_head.weight.device
        heads, head_dim = self.config.num_heads, self.config.d_model // self.config.num_heads
        empty = torch.zeros(batch_size, heads, 0, head_dim, device=device)  # (B, H, 0, Dh)
        layers = [{"k": empty, "v": empty} for _ in self.layers]
        return {"position": torch.zeros(batch_size, dtype=torch.long, device=device), "layers": layers}

    @torch.no_grad()
    def step(self, tokens: Tensor, state: dict) -> tuple[Tensor, dict, None]:
        """Feed one token per row (B,) -> next-token logits (B, V), the new state, None.

        Raises ValueError once the cache holds config.max_len positions.
        """
        position = _position(state, self.config.max_len)
        x = self.embed(tokens.unsqueeze(1), offset=position)  # (B, 1, D)
        layers = []
        for layer, cache in zip(self.layers, state["layers"]):
            cache = dict(cache)  # a copy: the caller's state is left as it was
            x, _ = layer(x, is_causal=True, rope=self.rope, cache=cache)
            layers.append(cache)
        logits = self.lm_head(self.final_norm(x))[:, 0]  # (B, V)
        return logits, {"position": state["position"] + 1, "layers": layers}, None


class BERT(_SelfAttentionStack):
    """Encoder-only masked language model: forward(tokens, pad_mask=None, trace=False) -> (B, T, V)."""

    def __init__(self, config: TransformerConfig):
        super().__init__(config)
        # BERT's masked-LM head: dense layer, GELU, LayerNorm, then the (tied) vocabulary projection
        self.mlm_dense = nn.Linear(config.d_model, config.d_model)
        self.mlm_norm = nn.LayerNorm(config.d_model)
        self.lm_head = _output_head(config, self.embed)
        self.lm_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, tokens: Tensor, pad_mask: Tensor | None = None, trace: bool = False):
        record = Trace() if trace else None
        x = self.mlm_norm(F.gelu(self.mlm_dense(self.trunk(tokens, pad_mask, record))))
        logits = self.lm_head(x) + self.lm_bias  # (B, T, V)
        return (logits, record) if trace else logits


MODEL_FAMILIES = (
    ModelFamily("transformer", TransformerConfig, Transformer, presets={
        "tiny": dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0),
        "small": dict(d_model=256, num_heads=4, num_layers=3, d_ff=1024, dropout=0.1),
    }),
    ModelFamily("gpt", TransformerConfig, GPT, presets={
        "tiny": dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0),
        "small": dict(d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.0),
    }),
    ModelFamily("bert", TransformerConfig, BERT, presets={
        "tiny": dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0),
        "small": dict(d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.1),
    }),
)
