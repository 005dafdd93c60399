"""The configs of the built-in families (dataclasses), their JSON round trip, and `make_config` /
`build_model` for any family in the registry (`seqmodels.families`; presets live with each model).

Token ids 0..4 are reserved in every vocabulary: <pad>=0 <bos>=1 <eos>=2 <unk>=3 <mask>=4.
Importing this module does not import torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Union

from seqmodels.families import model_family
from seqmodels.scores import SCORES

if TYPE_CHECKING:
    from torch import nn

PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = 0, 1, 2, 3, 4
CELLS = ("rnn", "ugrnn", "gru", "lstm")
ATTENTION_SCORES = tuple(SCORES)  # "none" and every score in seqmodels.scores
POSITIONAL = ("sinusoidal", "learned", "rope")


def _check_cell(cell: str) -> None:
    if cell not in CELLS:
        raise ValueError(f"unknown cell {cell!r}; choose one of {', '.join(CELLS)}")


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

    def validate(self) -> None:
        _check_cell(self.cell)


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

    def validate(self) -> None:
        _check_cell(self.cell)
        if self.attention not in SCORES:
            raise ValueError(
                f"unknown attention {self.attention!r}; choose one of {', '.join(SCORES)}"
            )


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

    def validate(self) -> None:
        if self.positional not in POSITIONAL:
            raise ValueError(f"unknown positional encoding {self.positional!r}")
        if self.num_heads < 1 or self.d_model % self.num_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by {self.num_heads} heads")
        if self.positional == "rope" and (self.d_model // self.num_heads) % 2:
            raise ValueError("RoPE rotates pairs of features: d_model / num_heads must be even")


ModelConfig = Union[RNNLMConfig, Seq2SeqConfig, TransformerConfig]  # or a registered family's


def make_config(family: str, preset: str | None = None, **overrides: Any) -> ModelConfig:
    """A config for `family`, starting from `preset` (if given) and then `overrides`."""
    spec = model_family(family)
    values: dict[str, Any] = {"family": family}
    if preset is not None:
        if preset not in spec.presets:
            raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(spec.presets)}")
        values.update(spec.presets[preset])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return _config(spec.config_class, values)


def _config(cls: type, values: dict[str, Any]) -> ModelConfig:
    """cls(**values), validated; a setting the family does not have is a ValueError."""
    unknown = sorted(set(values) - {f.name for f in fields(cls)})
    if unknown:
        raise ValueError(f"{values['family']} models have no setting {', '.join(unknown)}")
    config = cls(**values)
    validate(config)
    return config


def validate(config: ModelConfig) -> None:
    """Raise ValueError for a value the family cannot build (the config's own validate())."""
    dropout = getattr(config, "dropout", 0.0)
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    check = getattr(config, "validate", None)
    if check is not None:
        check()


def config_to_dict(config: ModelConfig) -> dict[str, Any]:
    return asdict(config)


def config_from_dict(data: dict[str, Any]) -> ModelConfig:
    return _config(model_family(data.get("family")).config_class, dict(data))


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
    return model_family(config.family).build(config)


def count_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Parameters counted once each, so tied embeddings are not counted twice."""
    params = {id(p): p for p in model.parameters() if p.requires_grad or not trainable_only}
    return sum(p.numel() for p in params.values())
