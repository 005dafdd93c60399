"""One dataclass config per model family, their JSON round trip, presets and `build_model`.

Token ids 0..4 are reserved in every vocabulary: <pad>=0 <bos>=1 <eos>=2 <unk>=3 <mask>=4.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Union

from torch import nn

PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = 0, 1, 2, 3, 4
CELLS = ("rnn", "ugrnn", "gru", "lstm")
ATTENTION_SCORES = ("none", "dot", "general", "scaled-dot", "additive", "cosine", "location")
FAMILIES = ("rnn-lm", "seq2seq", "transformer", "gpt", "bert")
POSITIONAL = ("sinusoidal", "learned", "rope")


@dataclass
class RNNLMConfig:
    family: str = "rnn-lm"
    vocab_size: int = 64
    cell: str = "lstm"
    embed_dim: int = 64
    hidden_size: int = 128
    num_layers: int = 1
    dropout: float = 0.0
    tie_weights: bool = False  # needs embed_dim == hidden_size


@dataclass
class Seq2SeqConfig:
    family: str = "seq2seq"
    src_vocab_size: int = 64
    vocab_size: int = 64  # target vocabulary
    cell: str = "gru"
    attention: str = "additive"  # one of ATTENTION_SCORES; "none" is the thought-vector bottleneck
    embed_dim: int = 64
    hidden_size: int = 128
    num_layers: int = 1
    bidirectional_encoder: bool = True
    reverse_source: bool = False  # Sutskever et al.'s trick, useful without attention
    dropout: float = 0.0
    max_src_len: int = 128  # location-based attention scores a fixed number of source positions


@dataclass
class TransformerConfig:
    family: str = "transformer"  # "transformer" (encoder-decoder), "gpt" (decoder-only) or "bert"
    src_vocab_size: int = 64  # encoder-decoder only
    vocab_size: int = 64  # output vocabulary (target, or the LM's)
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2  # per stack: encoder and decoder each have this many
    d_ff: int = 512
    dropout: float = 0.1
    positional: str = "sinusoidal"  # one of POSITIONAL
    max_len: int = 256  # longest sequence (GPT context, positional table size)
    norm_first: bool = True  # pre-norm; False is the original post-norm
    tie_weights: bool = True  # output projection shares the target embedding


ModelConfig = Union[RNNLMConfig, Seq2SeqConfig, TransformerConfig]
_CONFIG_FOR_FAMILY = {
    "rnn-lm": RNNLMConfig,
    "seq2seq": Seq2SeqConfig,
    "transformer": TransformerConfig,
    "gpt": TransformerConfig,
    "bert": TransformerConfig,
}

# Size presets, per family. Vocabulary sizes come from the data, not from presets.
PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "tiny": {
        "rnn-lm": dict(embed_dim=32, hidden_size=64, num_layers=1),
        "seq2seq": dict(embed_dim=32, hidden_size=64, num_layers=1),
        "transformer": dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0),
        "gpt": dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0),
        "bert": dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0),
    },
    "small": {
        "rnn-lm": dict(embed_dim=128, hidden_size=256, num_layers=2, dropout=0.1),
        "seq2seq": dict(embed_dim=128, hidden_size=256, num_layers=1, dropout=0.1),
        "transformer": dict(d_model=256, num_heads=4, num_layers=3, d_ff=1024, dropout=0.1),
        "gpt": dict(d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.0),
        "bert": dict(d_model=128, num_heads=4, num_layers=4, d_ff=512, dropout=0.1),
    },
}


def make_config(family: str, preset: str | None = None, **overrides: Any) -> ModelConfig:
    """A config for `family`, starting from `preset` (if given) and then `overrides`."""
    if family not in _CONFIG_FOR_FAMILY:
        raise ValueError(f"unknown model family {family!r}; choose one of {', '.join(FAMILIES)}")
    values: dict[str, Any] = {"family": family}
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
        values.update(PRESETS[preset][family])
    values.update({k: v for k, v in overrides.items() if v is not None})
    cls = _CONFIG_FOR_FAMILY[family]
    unknown = sorted(set(values) - {f.name for f in fields(cls)})
    if unknown:
        raise ValueError(f"{family} models have no setting {', '.join(unknown)}")
    config = cls(**values)
    validate(config)
    return config


def validate(config: ModelConfig) -> None:
    if not 0 <= config.dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), got {config.dropout}")
    if isinstance(config, (RNNLMConfig, Seq2SeqConfig)) and config.cell not in CELLS:
        raise ValueError(f"unknown cell {config.cell!r}; choose one of {', '.join(CELLS)}")
    if isinstance(config, Seq2SeqConfig) and config.attention not in ATTENTION_SCORES:
        raise ValueError(
            f"unknown attention {config.attention!r}; choose one of {', '.join(ATTENTION_SCORES)}"
        )
    if isinstance(config, TransformerConfig):
        if config.positional not in POSITIONAL:
            raise ValueError(f"unknown positional encoding {config.positional!r}")
        if config.num_heads < 1 or config.d_model % config.num_heads:
            raise ValueError(
                f"d_model {config.d_model} is not divisible by {config.num_heads} heads"
            )
        if config.positional == "rope" and (config.d_model // config.num_heads) % 2:
            raise ValueError("RoPE rotates pairs of features: d_model / num_heads must be even")


def config_to_dict(config: ModelConfig) -> dict[str, Any]:
    return asdict(config)


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    family = data.get("family")
    if family not in _CONFIG_FOR_FAMILY:
        raise ValueError(f"config has unknown model family {family!r}")
    cls = _CONFIG_FOR_FAMILY[family]
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"config has unknown fields for {family}: {', '.join(unknown)}")
    config = cls(**data)
    validate(config)
    return config


def config_to_json(config: ModelConfig) -> str:
    return json.dumps(config_to_dict(config), indent=2, sort_keys=True)


def config_from_json(text: str) -> ModelConfig:
    return config_from_dict(json.loads(text))


def with_vocab(config: ModelConfig, vocab_size: int, src_vocab_size: int | None = None):
    """The same config with vocabulary sizes taken from the data's tokenizers."""
    changes: dict[str, Any] = {"vocab_size": vocab_size}
    if src_vocab_size is not None and hasattr(config, "src_vocab_size"):
        changes["src_vocab_size"] = src_vocab_size
    return replace(config, **changes)


def build_model(config: ModelConfig) -> nn.Module:
    validate(config)
    if config.family == "rnn-lm":
        from models.rnn_lm import RNNLanguageModel

        return RNNLanguageModel(config)
    if config.family == "seq2seq":
        from models.seq2seq import Seq2Seq

        return Seq2Seq(config)
    from models.transformer import BERT, GPT, Transformer

    return {"transformer": Transformer, "gpt": GPT, "bert": BERT}[config.family](config)


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Parameters counted once each, so tied embeddings are not counted twice."""
    params = {id(p): p for p in model.parameters() if p.requires_grad or not trainable_only}
    return sum(p.numel() for p in params.values())
