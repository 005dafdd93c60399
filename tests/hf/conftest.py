"""Tiny random Hugging Face models, built once per test session in a temporary folder."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def hf_models(tmp_path_factory):
    """name -> folder of a saved tiny model: gpt2, marian, t5, bert, distilbert (built lazily)."""
    pytest.importorskip("transformers")
    from tests.hf import builders

    root = tmp_path_factory.mktemp("hf-models")
    build = {
        "gpt2": lambda path: builders.build_gpt2(path),
        "marian": lambda path: builders.build_marian(path, root / "marian-spm"),
        "t5": lambda path: builders.build_t5(path),
        "bert": lambda path: builders.build_bert(path),
        "distilbert": lambda path: builders.build_bert(path, distil=True),
    }
    built = {}

    def folder(name):
        if name not in built:
            built[name] = build[name](root / name)
        return built[name]

    return folder


@pytest.fixture(scope="session")
def hf_workspace(hf_models):
    """name -> the Workspace explorer opens from that folder (opened once)."""
    from explorer.hf import open_hf_model

    opened = {}

    def workspace(name):
        if name not in opened:
            opened[name] = open_hf_model(hf_models(name))
        return opened[name]

    return workspace
