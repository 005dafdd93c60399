"""New models from scratch with a Hugging Face architecture: hf-gpt2, hf-bert, hf-marian, hf-t5.

Each is a family of the registry (explorer.families and seqmodels.families) like our own: the new-model
dialog and `explorer train --arch hf-gpt2` build it from a preset and the size fields (layers,
d_model, heads, d_ff, max_len, dropout), or `--hf-config config.json` from a Hugging Face config
file (its model_type picks the family, its sizes fill the fields, its other settings are kept).
The vocabulary and special ids are the data's tokenizer's (ours: <pad> 0, <bos> 1, <eos> 2,
<mask> 4), so it trains, decodes and saves exactly like our models (a checkpoint of ours), while
the network is transformers' own class behind explorer.hf.adapter.

This module imports neither torch nor transformers; the families are listed only when
transformers is installed (the `[hf]` extra).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from explorer.data.tokenizers import BOS_ID, EOS_ID, MASK_ID, PAD_ID
from explorer.errors import UserError
from explorer.families import Family, Lazy, register_family
from explorer.hf.families import POSITION_READERS
from seqmodels import config as seqconfig
from seqmodels.settings import setting


# the field's dialog widget, registered by the UI (explorer/ui/dialogs/hf_config.py)
HF_CONFIG_EDITOR = "hf-config-file"


@dataclass
class HFArchitectureConfig:
    """A language model (hf-gpt2, hf-bert) with a Hugging Face architecture."""

    family: str = "hf-gpt2"
    vocab_size: int = seqconfig.vocab_size()
    num_layers: int = seqconfig.num_layers(2)
    d_model: int = seqconfig.size(64, "d_model", "Width of every layer (a multiple of the heads)")
    num_heads: int = seqconfig.size(4, "heads", seqconfig.HEADS_TIP)
    d_ff: int = seqconfig.size(256, "feed-forward size", "Hidden size of each feed-forward block")
    max_len: int = seqconfig.size(128, "max length", seqconfig.MAX_LEN_TIP, advanced=True)
    dropout: float = seqconfig.dropout(0.1)
    # a config.json's text the architecture starts from (activation, norms, ...); "" = transformers'
    # defaults. The fields above and the data's vocabulary override it.
    hf_config: str = setting("", "HF config.json", "A Hugging Face config.json the architecture "
                             "starts from", editor=HF_CONFIG_EDITOR)

    def validate(self) -> None:
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of heads {self.num_heads}")

    # what explorer.hf.adapter reads of a model's config: our tokenizers' special ids
    start_id = property(lambda self: BOS_ID)
    eos_id = property(lambda self: EOS_ID)
    pad_id = property(lambda self: PAD_ID)
    mask_id = property(lambda self: MASK_ID)
    max_src_len = property(lambda self: self.max_len)
    path = property(lambda self: "")
    model_type = property(lambda self: ARCHITECTURES[self.family].model_type)


@dataclass
class HFSeq2SeqArchitectureConfig(HFArchitectureConfig):
    """An encoder-decoder (hf-marian, hf-t5): a source vocabulary too."""

    family: str = "hf-marian"
    src_vocab_size: int = seqconfig.src_vocab_size()


def _marian(config) -> dict[str, Any]:  # its own embedding per side, as our seq2seq has
    return dict(vocab_size=config.src_vocab_size, decoder_vocab_size=config.vocab_size,
                share_encoder_decoder_embeddings=False, forced_eos_token_id=None)


def _t5(config) -> dict[str, Any]:  # one shared table: both sides' ids index it
    return dict(vocab_size=max(config.vocab_size, config.src_vocab_size),
                d_kv=config.d_model // config.num_heads)


@dataclass(frozen=True)
class Architecture:
    model_type: str
    kind: str  # the opened family it behaves as: hf-causal-lm, hf-seq2seq, hf-masked-lm
    summary: str
    sizes: dict[str, tuple[str, ...]]  # our field -> the HF config attributes it sets
    data: Callable[[Any], dict[str, Any]]  # config -> vocabulary and special ids
    stacks: dict[str, tuple[str, int]] = field(default_factory=dict)
    embeddings: dict[str, str] = field(default_factory=dict)


_IDS = dict(pad_token_id=PAD_ID, bos_token_id=BOS_ID, eos_token_id=EOS_ID)
_SEQ2SEQ_IDS = dict(pad_token_id=PAD_ID, eos_token_id=EOS_ID, decoder_start_token_id=BOS_ID)
ARCHITECTURES = {
    "hf-gpt2": Architecture(
        "gpt2", "hf-causal-lm", "GPT-2 (transformers' GPT2LMHeadModel), from scratch on your data",
        {"num_layers": ("n_layer",), "d_model": ("n_embd",), "num_heads": ("n_head",),
         "d_ff": ("n_inner",), "max_len": ("n_positions",),
         "dropout": ("resid_pdrop", "embd_pdrop", "attn_pdrop")},
        lambda c: dict(vocab_size=c.vocab_size, **_IDS),
        stacks={"decoder": ("hf.transformer.wte", 0)},
        embeddings={"input": "hf.transformer.wte", "output": "hf.lm_head"}),
    "hf-bert": Architecture(
        "bert", "hf-masked-lm", "BERT (transformers' BertForMaskedLM), from scratch on your data",
        {"num_layers": ("num_hidden_layers",), "d_model": ("hidden_size",),
         "num_heads": ("num_attention_heads",), "d_ff": ("intermediate_size",),
         "max_len": ("max_position_embeddings",),
         "dropout": ("hidden_dropout_prob", "attention_probs_dropout_prob")},
        lambda c: dict(vocab_size=c.vocab_size, pad_token_id=PAD_ID),
        stacks={"encoder": ("hf.bert.embeddings.word_embeddings", 0)},
        embeddings={"input": "hf.bert.embeddings.word_embeddings",
                    "output": "hf.cls.predictions.decoder"}),
    "hf-marian": Architecture(
        "marian", "hf-seq2seq", "Marian (transformers' MarianMTModel, as opus-mt), from scratch",
        {"num_layers": ("encoder_layers", "decoder_layers"), "d_model": ("d_model",),
         "num_heads": ("encoder_attention_heads", "decoder_attention_heads"),
         "d_ff": ("encoder_ffn_dim", "decoder_ffn_dim"), "max_len": ("max_position_embeddings",),
         "dropout": ("dropout",)},
        lambda c: {**_marian(c), **_SEQ2SEQ_IDS},
        stacks={"encoder": ("hf.model.encoder.embed_tokens", 0),
                "decoder": ("hf.model.decoder.embed_tokens", 1)},
        embeddings={"input": "hf.model.decoder.embed_tokens",
                    "source": "hf.model.encoder.embed_tokens", "output": "hf.lm_head"}),
    "hf-t5": Architecture(
        "t5", "hf-seq2seq", "T5 (transformers' T5ForConditionalGeneration), relative positions",
        {"num_layers": ("num_layers", "num_decoder_layers"), "d_model": ("d_model",),
         "num_heads": ("num_heads",), "d_ff": ("d_ff",), "dropout": ("dropout_rate",)},
        lambda c: {**_t5(c), **_SEQ2SEQ_IDS},
        stacks={"encoder": ("hf.encoder.embed_tokens", 0), "decoder": ("hf.decoder.embed_tokens", 1)},
        embeddings={"input": "hf.decoder.embed_tokens", "source": "hf.encoder.embed_tokens",
                    "output": "hf.lm_head"}),
}
PRESETS = {
    "tiny": dict(num_layers=2, d_model=64, num_heads=4, d_ff=256, max_len=128, dropout=0.1),
    "small": dict(num_layers=4, d_model=256, num_heads=4, d_ff=1024, max_len=256, dropout=0.1),
}
# keys of a saved config.json that describe the file, not the architecture
_NOT_SETTINGS = ("model_type", "architectures", "transformers_version", "_name_or_path",
                 "torch_dtype", "dtype")


def hf_settings(config) -> dict[str, Any]:
    """The transformers config values of one of our configs: the file's, then the sizes, then
    the data's vocabulary and ids."""
    architecture = ARCHITECTURES[config.family]
    settings = json.loads(config.hf_config) if config.hf_config else {}
    settings = {k: v for k, v in settings.items() if k not in _NOT_SETTINGS}
    for name, attributes in architecture.sizes.items():
        settings.update(dict.fromkeys(attributes, getattr(config, name)))
    settings.update(architecture.data(config))
    return settings


def build_architecture(config):
    """The explorer.hf.adapter model of `config`: transformers' class with random weights."""
    from explorer.hf import adapter as adapters
    from explorer.hf.families import HF_FAMILIES
    from explorer.hf.loader import import_transformers

    transformers = import_transformers(config.family)
    architecture = ARCHITECTURES[config.family]
    kind = HF_FAMILIES[architecture.kind]
    hf_config = transformers.AutoConfig.for_model(architecture.model_type, **hf_settings(config))
    model = getattr(transformers, kind.auto_class).from_config(hf_config, attn_implementation="eager")
    return getattr(adapters, kind.adapter)(model, config)


def architecture_from_file(path) -> tuple[str, dict[str, Any]]:
    """(family, config fields) of a Hugging Face config.json: its sizes, and its text as
    `hf_config`. One-line UserErrors for a file that is no such config."""
    from explorer.errors import read_json
    from explorer.hf.detect import check_sizes
    from explorer.hf.loader import import_transformers

    data = read_json(path)
    by_type = {a.model_type: name for name, a in ARCHITECTURES.items()}
    if not isinstance(data, dict) or data.get("model_type") not in by_type:
        found = data.get("model_type") if isinstance(data, dict) else None
        raise UserError(f"{path}: model_type {found!r} is not one the explorer builds from "
                        f"scratch ({', '.join(by_type)})")
    if data.get("auto_map"):
        raise UserError(f"{path}: the architecture needs trust_remote_code (auto_map); the "
                        "explorer only builds transformers' own model classes")
    check_sizes(data, path)
    family = by_type[data["model_type"]]
    transformers = import_transformers(str(path))
    settings = {k: v for k, v in data.items() if k not in _NOT_SETTINGS}
    try:  # transformers' defaults fill what the file leaves out
        hf_config = transformers.AutoConfig.for_model(data["model_type"], **settings)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{path}: not a valid {data['model_type']} config ({exc})") from None
    fields = {}
    for name, attributes in ARCHITECTURES[family].sizes.items():
        value = getattr(hf_config, attributes[0], None)
        if value is None and name == "d_ff":  # GPT-2's n_inner: None means 4 x width
            value = 4 * hf_config.n_embd
        if value is not None:
            fields[name] = value
    fields["hf_config"] = json.dumps(settings, sort_keys=True)
    return family, fields


def _register() -> None:
    from seqmodels.families import ModelFamily, register_model_family

    kinds = {"hf-causal-lm": ("block_loss", "BlockFeed", "encode_next_token"),
             "hf-masked-lm": ("block_loss", "BlockFeed", "encode_masked"),
             "hf-seq2seq": ("pair_loss", "Seq2SeqFeed", "encode_pair")}
    for name, architecture in ARCHITECTURES.items():
        loss, feed, probe = kinds[architecture.kind]
        source = architecture.kind == "hf-seq2seq"
        register_family(Family(
            name, architecture.summary, has_source=source, recurrent=False, has_positions=True,
            loss=Lazy(f"explorer.training.objectives:{loss}"),
            feed=Lazy(f"explorer.training.feeds:{feed}"),
            encode_probe=Lazy(f"explorer.analysis.probe:{probe}"),
            masked_lm=architecture.kind == "hf-masked-lm", max_len_field="max_len",
            stacks=architecture.stacks, embeddings=architecture.embeddings,
            **POSITION_READERS))
        config_class = HFSeq2SeqArchitectureConfig if source else HFArchitectureConfig
        register_model_family(ModelFamily(name, config_class, build_architecture, PRESETS))


if importlib.util.find_spec("transformers") is not None:  # the [hf] extra
    _register()
