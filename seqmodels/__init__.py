"""Pure-PyTorch sequence models that can show what they attend to. No Qt, no files.

Public entries (imported lazily, so `import models` stays cheap):
    RNN, RNNCell, UGRNNCell, GRUCell, LSTMCell         seqmodels.recurrent
    Alignment (the RNN attention)                      seqmodels.alignment
    SCORES, AttentionScore (the attention-score table) seqmodels.scores
    MultiHeadAttention                                 seqmodels.attention
    positional (module: sinusoidal, LearnedPositional, RotaryEmbedding)
    RNNLanguageModel, Seq2Seq, Transformer, GPT, BERT  one file per family
    configs, make_config, build_model, count_parameters            seqmodels.config
    ModelFamily, model_family, model_families, register_model_family   seqmodels.families
    Trace, AttentionMap                                seqmodels.trace
    reorder_state                                      seqmodels.state
"""

from __future__ import annotations

import importlib

_LAZY = {
    "RNN": "seqmodels.recurrent",
    "RNNCell": "seqmodels.recurrent",
    "UGRNNCell": "seqmodels.recurrent",
    "GRUCell": "seqmodels.recurrent",
    "LSTMCell": "seqmodels.recurrent",
    "Alignment": "seqmodels.alignment",
    "MultiHeadAttention": "seqmodels.attention",
    "RNNLanguageModel": "seqmodels.rnn_lm",
    "Seq2Seq": "seqmodels.seq2seq",
    "Transformer": "seqmodels.transformer",
    "GPT": "seqmodels.transformer",
    "BERT": "seqmodels.transformer",
    "RNNLMConfig": "seqmodels.config",
    "Seq2SeqConfig": "seqmodels.config",
    "TransformerConfig": "seqmodels.config",
    "ModelFamily": "seqmodels.families",
    "model_family": "seqmodels.families",
    "model_families": "seqmodels.families",
    "register_model_family": "seqmodels.families",
    "SCORES": "seqmodels.scores",
    "AttentionScore": "seqmodels.scores",
    "make_config": "seqmodels.config",
    "build_model": "seqmodels.config",
    "count_parameters": "seqmodels.config",
    "config_from_dict": "seqmodels.config",
    "config_to_dict": "seqmodels.config",
    "config_from_json": "seqmodels.config",
    "config_to_json": "seqmodels.config",
    "Trace": "seqmodels.trace",
    "AttentionMap": "seqmodels.trace",
    "reorder_state": "seqmodels.state",
}

__all__ = sorted(_LAZY) + ["positional"]


def __getattr__(name: str):
    if name == "positional":
        return importlib.import_module("seqmodels.positional")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'seqmodels' has no attribute {name!r}")
