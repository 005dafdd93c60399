"""Pure-PyTorch sequence models that can show what they attend to. No Qt, no files.

Public entries (imported lazily, so `import models` stays cheap):
    RNN, RNNCell, UGRNNCell, GRUCell, LSTMCell         models.recurrent
    Alignment (the RNN attention)                      models.alignment
    SCORES, AttentionScore (the attention-score table) models.scores
    MultiHeadAttention                                 models.attention
    positional (module: sinusoidal, LearnedPositional, RotaryEmbedding)
    RNNLanguageModel, Seq2Seq, Transformer, GPT, BERT  one file per family
    configs, make_config, build_model, count_parameters            models.config
    ModelFamily, model_family, model_families, register_model_family   models.families
    Trace, AttentionMap                                models.trace
    reorder_state                                      models.state
"""

from __future__ import annotations

import importlib

_LAZY = {
    "RNN": "models.recurrent",
    "RNNCell": "models.recurrent",
    "UGRNNCell": "models.recurrent",
    "GRUCell": "models.recurrent",
    "LSTMCell": "models.recurrent",
    "Alignment": "models.alignment",
    "MultiHeadAttention": "models.attention",
    "RNNLanguageModel": "models.rnn_lm",
    "Seq2Seq": "models.seq2seq",
    "Transformer": "models.transformer",
    "GPT": "models.transformer",
    "BERT": "models.transformer",
    "RNNLMConfig": "models.config",
    "Seq2SeqConfig": "models.config",
    "TransformerConfig": "models.config",
    "ModelFamily": "models.families",
    "model_family": "models.families",
    "model_families": "models.families",
    "register_model_family": "models.families",
    "SCORES": "models.scores",
    "AttentionScore": "models.scores",
    "make_config": "models.config",
    "build_model": "models.config",
    "count_parameters": "models.config",
    "config_from_dict": "models.config",
    "config_to_dict": "models.config",
    "config_from_json": "models.config",
    "config_to_json": "models.config",
    "Trace": "models.trace",
    "AttentionMap": "models.trace",
    "reorder_state": "models.state",
}

__all__ = sorted(_LAZY) + ["positional"]


def __getattr__(name: str):
    if name == "positional":
        return importlib.import_module("models.positional")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'models' has no attribute {name!r}")
