"""The configs of the built-in families (dataclasses), their JSON round trip, and `make_config` /
`build_model` for any family in the registry (`seqmodels.families`; presets live with each model).

Token ids 0..4 are reserved in every vocabulary: <pad>=0 <bos>=1 <eos>=2 <unk>=3 <mask>=4.
Importing this module does not import torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Union

from seqmodels.cells import cell_names, cell_tips
from seqmodels.families import model_family
from seqmodels.scores import SCORES
from seqmodels.settings import MAX_SIZE, setting

if TYPE_CHECKING:
    from torch import nn

PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID = 0, 1, 2, 3, 4
ATTENTION_SCORES = tuple(SCORES)  # "none" and every score in seqmodels.scores
POSITIONAL_TIPS = {
    "sinusoidal": "Fixed sines and cosines of geometric wavelengths (Vaswani 2017)",
    "learned": "A trained embedding per position, up to max_len",
    "rope": "Rotary: rotates query/key pairs by position-dependent angles",
}
POSITIONAL = tuple(POSITIONAL_TIPS)


def _score_tips() -> dict[str, str]:
    return {name: score.tip for name, score in SCORES.items()}


def _check_cell(cell: str) -> None:
    if cell not in cell_names():
        raise ValueError(f"unknown cell {cell!r}; choose one of {', '.join(cell_names())}")


# The fields several families share, declared once (seqmodels.settings: label, tip, range).
def vocab_size(default: int = 64, tip: str = "Output vocabulary (the target's, or the LM's)"):
    return setting(default, "vocabulary", tip, low=1, high=MAX_SIZE, sized_by_data=True)


def src_vocab_size(default: int = 64):
    return setting(default, "source vocabulary", "The encoder's vocabulary", low=1, high=MAX_SIZE,
                   sized_by_data=True)


def size(default: int, label: str, tip: str, **details: Any):
    return setting(default, label, tip, low=1, high=MAX_SIZE, **details)


def dropout(default: float):
    return setting(default, "dropout", "Probability of zeroing an activation while training",
                   low=0.0, high=1.0, high_open=True, advanced=True)


def num_layers(default: int, tip: str = "Stacked layers (per stack for encoder-decoder models)"):
    return size(default, "layers", tip)


def cell(default: str):
    return setting(default, "cell", "The recurrent cell of RNN models", choices=cell_tips)


def tie_weights(default: bool, tip: str = "The output projection reuses the embedding matrix"):
    return setting(default, "tie input and output embeddings", tip, advanced=True)


EMBED_TIP = "Size of the token embeddings"
HIDDEN_TIP = "Size of the recurrent state h_t"
HEADS_TIP = "Attention heads; each sees d_model / heads dimensions"
MAX_LEN_TIP = "Longest sequence the positions (and GPT context) cover"


@dataclass
class RNNLMConfig:
    family: str = "rnn-lm"
    vocab_size: int = vocab_size()
    cell: str = cell("lstm")
    embed_dim: int = size(64, "embedding size", EMBED_TIP)
    hidden_size: int = size(128, "hidden size", HIDDEN_TIP)
    num_layers: int = num_layers(1)
    dropout: float = dropout(0.0)
    tie_weights: bool = tie_weights(False, "The output projection reuses the embedding matrix "
                                           "(needs embedding size == hidden size)")

    def validate(self) -> None:
        _check_cell(self.cell)


@dataclass
class Seq2SeqConfig:
    family: str = "seq2seq"
    src_vocab_size: int = src_vocab_size()
    vocab_size: int = vocab_size(tip="The target vocabulary")
    cell: str = cell("gru")
    # "none" is the thought-vector bottleneck
    attention: str = setting("additive", "attention",
                             "How the decoder scores encoder states (seq2seq only)",
                             choices=_score_tips)
    embed_dim: int = size(64, "embedding size", EMBED_TIP)
    hidden_size: int = size(128, "hidden size", HIDDEN_TIP)
    num_layers: int = num_layers(1)
    bidirectional_encoder: bool = setting(True, "bidirectional encoder",
                                          "The encoder reads both ways: h_i = [→h_i; ←h_i]",
                                          advanced=True)
    reverse_source: bool = setting(False, "reverse the source",
                                   "Read the source backwards (Sutskever et al.'s trick, useful "
                                   "without attention)", advanced=True)
    dropout: float = dropout(0.0)
    max_src_len: int = size(128, "longest source", "Source positions a location-based attention "
                                                    "score covers", advanced=True)

    def validate(self) -> None:
        _check_cell(self.cell)
        if self.attention not in SCORES:
            raise ValueError(
                f"unknown attention {self.attention!r}; choose one of {', '.join(SCORES)}"
            )


@dataclass
class TransformerConfig:
    family: str = "transformer"  # "transformer" (encoder-decoder), "gpt" (decoder-only) or "bert"
    src_vocab_size: int = src_vocab_size()  # encoder-decoder only
    vocab_size: int = vocab_size()
    d_model: int = size(128, "d_model", "Width of every Transformer layer (a multiple of heads)")
    num_heads: int = size(4, "heads", HEADS_TIP)
    num_layers: int = num_layers(2)  # per stack: encoder and decoder each have this many
    d_ff: int = size(512, "feed-forward size", "Hidden size of each position-wise feed-forward net")
    dropout: float = dropout(0.1)
    positional: str = setting("sinusoidal", "positional", "How Transformers see token order",
                              choices=POSITIONAL_TIPS)
    # longest sequence (GPT context, positional table size)
    max_len: int = size(256, "max length", MAX_LEN_TIP, advanced=True)
    norm_first: bool = setting(True, "pre-norm", "Normalise before each sublayer; off is the "
                                                 "original post-norm", advanced=True)
    tie_weights: bool = tie_weights(True)  # output projection shares the target embedding

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
