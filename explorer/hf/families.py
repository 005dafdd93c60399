"""The Hugging Face model families: one table entry each (what the family registry needs).

`auto_class` is the transformers Auto class that loads it, `adapter` the explorer.hf.adapter class
that gives it our decoding interface; `lm` / `source` / `masked` say whether it continues a prompt,
translates a source, or fills in masked tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.errors import UserError
from explorer.analysis.activations.registry import register_plugin_provider
from explorer.families import Family, Lazy, register_family


@dataclass(frozen=True)
class HFFamily:
    name: str
    auto_class: str
    adapter: str
    lm: bool
    source: bool
    masked: bool


HF_FAMILIES = {
    "hf-causal-lm": HFFamily("hf-causal-lm", "AutoModelForCausalLM", "HFCausalLM",
                             lm=True, source=False, masked=False),
    "hf-seq2seq": HFFamily("hf-seq2seq", "AutoModelForSeq2SeqLM", "HFSeq2Seq",
                           lm=False, source=True, masked=False),
    "hf-masked-lm": HFFamily("hf-masked-lm", "AutoModelForMaskedLM", "HFMaskedLM",
                             lm=False, source=False, masked=True),
}


def not_trainable(*args, **kwargs):
    """The registry's loss and feed of a Hugging Face masked LM: fine-tuning is not built yet."""
    raise UserError("fine-tuning is built for Hugging Face causal LMs and encoder-decoders only")


_SUMMARIES = {
    "hf-causal-lm": "Hugging Face causal language model (GPT-2, ...), opened from a folder",
    "hf-seq2seq": "Hugging Face encoder-decoder (Marian, T5, BART), opened from a folder",
    "hf-masked-lm": "Hugging Face masked language model (BERT, DistilBERT), opened from a folder",
}
# hf-causal-lm trains like our gpt (next token on blocks of a stream), hf-seq2seq on pairs in the
# model's own encoding (explorer.hf.training); masked LMs are not fine-tuned yet
_LOSS = {"hf-causal-lm": "explorer.training.objectives:block_loss",
         "hf-seq2seq": "explorer.hf.training:hf_pair_loss"}
_FEED = {"hf-causal-lm": "explorer.training.feeds:BlockFeed",
         "hf-seq2seq": "explorer.hf.training:HFPairFeed"}
_PROBES = {"hf-causal-lm": "explorer.analysis.probe:encode_next_token",
           "hf-seq2seq": "explorer.hf.probe:encode_pair",
           "hf-masked-lm": "explorer.analysis.probe:encode_masked"}
# what a Hugging Face model uses for positions, for the positional panel and its headless CSV
POSITION_READERS = {
    "positions": Lazy("explorer.hf.positions:hf_model_positions"),
    "relative_bias": Lazy("explorer.hf.positions:relative_bias"),
    "no_positions_reason": Lazy("explorer.hf.positions:no_table_reason"),
}
for _family in HF_FAMILIES.values():  # opened from folders, never built: not in the menus
    register_family(Family(
        _family.name, _SUMMARIES[_family.name], has_source=_family.source, recurrent=False,
        has_positions=True,
        loss=Lazy(_LOSS.get(_family.name, "explorer.hf.families:not_trainable")),
        feed=Lazy(_FEED.get(_family.name, "explorer.hf.families:not_trainable")),
        encode_probe=Lazy(_PROBES[_family.name]),
        masked_lm=_family.masked, max_len_field="max_len",  # None for relative positions (T5)
        attach_data=Lazy("explorer.hf.finetune:attach_data"),
        save=Lazy("explorer.hf.finetune:save_hf_model"),
        opens=Lazy("explorer.hf.detect:is_hf_model"),
        load=Lazy("explorer.hf.loader:open_hf_model"),
        **POSITION_READERS,
    ), listed=False)

# architecture-name endings (config.json "architectures") -> family
_HEADS = (("ForMaskedLM", "hf-masked-lm"), ("ForCausalLM", "hf-causal-lm"),
          ("LMHeadModel", "hf-causal-lm"), ("ForConditionalGeneration", "hf-seq2seq"),
          ("MTModel", "hf-seq2seq"))


def hf_family_of(config: dict, name: str) -> HFFamily:
    """The family of a config.json: its architectures first, then what transformers maps it to."""
    from transformers.models.auto import modeling_auto as auto

    model_type = config["model_type"]
    for architecture in config.get("architectures") or ():
        for ending, family in _HEADS:
            if architecture.endswith(ending):
                if HF_FAMILIES[family].source and not config.get("is_encoder_decoder", False):
                    continue
                return HF_FAMILIES[family]
    if config.get("is_encoder_decoder") and model_type in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return HF_FAMILIES["hf-seq2seq"]
    if model_type in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES and model_type not in (
        auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    ):
        return HF_FAMILIES["hf-masked-lm"]
    if model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return HF_FAMILIES["hf-causal-lm"]
    if model_type in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return HF_FAMILIES["hf-masked-lm"]
    raise UserError(f"{name}: a {model_type} model has no language-model head the explorer opens "
                    "(causal LM, encoder-decoder or masked LM)")

# the plug-in's activation provider, imported once transformers is (explorer/hf/activations.py)
register_plugin_provider("explorer.hf.activations:PROVIDER", "transformers")
