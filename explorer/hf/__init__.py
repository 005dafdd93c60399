"""Hugging Face models (GPT-2, Marian, T5, BART, BERT, ...) opened as workspaces, offline.

Needs the optional `[hf]` extra (transformers, sentencepiece) only when such a model is opened:
`is_hf_model` and everything else in explorer work without it.

    from explorer.hf import is_hf_model, open_hf_model
    workspace = open_hf_model("path/to/gpt2")   # or a model id already in the local HF cache
"""

from explorer.hf.detect import HF_EXTRA, is_hf_model


def open_hf_model(path):
    from explorer.hf.loader import open_hf_model as open_model

    return open_model(path)


__all__ = ["HF_EXTRA", "is_hf_model", "open_hf_model"]
