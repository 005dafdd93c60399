"""Is a path a Hugging Face model? Answered without transformers and without the network.

A Hugging Face model is a folder with `config.json` naming a `model_type` (our own checkpoints name
a `format` instead), or a model id (`gpt2`, `Helsinki-NLP/opus-mt-en-de`) already in the local
Hugging Face cache. Nothing is ever downloaded.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from explorer.errors import UserError

HF_EXTRA = 'pip install -e ".[hf]"'
# one of these means the tokenizer can be built offline (fast, byte-level BPE, WordPiece, sentencepiece)
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "vocab.txt", "spiece.model", "source.spm",
                   "sentencepiece.bpe.model", "tokenizer.model")
MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def hf_cache_dir() -> Path:
    """Where huggingface_hub keeps downloaded models (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/...)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"
    return Path(home) / "hub"


def cached_snapshot(model_id: str) -> Path | None:
    """The cached folder of `model_id` (its refs/main snapshot, or its only one), or None."""
    if not MODEL_ID.match(model_id) or ".." in model_id:
        return None
    repo = hf_cache_dir() / ("models--" + model_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        folder = snapshots / ref.read_text(encoding="utf-8").strip()
        return folder if folder.is_dir() else None
    found = sorted(p for p in snapshots.iterdir() if p.is_dir()) if snapshots.is_dir() else []
    return found[0] if len(found) == 1 else None


def read_hf_config(folder: Path) -> dict | None:
    """The folder's config.json when it describes a Hugging Face model, else None."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(config, dict) or "format" in config or "model_type" not in config:
        return None
    return config


def hf_model_folder(path) -> Path | None:
    """The folder holding the Hugging Face model `path` names (a folder or a cached id), or None."""
    folder = Path(path)
    if not folder.exists():
        folder = cached_snapshot(str(path))
        if folder is None:
            return None
    return folder if folder.is_dir() and read_hf_config(folder) is not None else None


def is_hf_model(path) -> bool:
    return hf_model_folder(path) is not None


def weight_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """(safetensors files, pytorch .bin files) in the folder."""
    return sorted(folder.glob("*.safetensors")), sorted(folder.glob("pytorch_model*.bin"))


# the sizes of Hugging Face configs that count something: transformers accepts any integer in
# them, builds a model with no layers from n_layer: -1 and fails only when it runs ("__len__()
# should return >= 0")
SIZE_FIELDS = frozenset((
    "n_layer", "n_layers", "num_layers", "num_hidden_layers", "num_decoder_layers",
    "encoder_layers", "decoder_layers", "n_head", "n_heads", "num_heads", "num_attention_heads",
    "encoder_attention_heads", "decoder_attention_heads", "n_embd", "dim", "d_model",
    "hidden_size", "d_ff", "d_kv", "ffn_dim", "hidden_dim", "intermediate_size",
    "encoder_ffn_dim", "decoder_ffn_dim", "vocab_size", "n_positions", "n_ctx",
    "max_position_embeddings"))


def check_sizes(config: dict, path) -> None:
    """A one-line UserError naming the file and the field for a size below 1."""
    for field, value in config.items():
        if field in SIZE_FIELDS and isinstance(value, int) and not isinstance(value, bool) \
                and value < 1:
            raise UserError(f"{path}: '{field}' must be a whole number >= 1, got {value}")


def check_folder(folder: Path, config: dict, name: str) -> None:
    """One-line UserErrors for what no loader should try: remote code, no weights, no tokenizer,
    a size below 1."""
    check_sizes(config, folder / "config.json")
    if config.get("auto_map"):
        raise UserError(f"{name}: the model needs trust_remote_code (its config.json has auto_map); "
                        "the explorer only runs transformers' own model classes")
    safetensors, bins = weight_files(folder)
    if not safetensors and not bins:
        raise UserError(f"{name}: no weights (model.safetensors or pytorch_model.bin) in the folder")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise UserError(f"{name}: no tokenizer files (one of {', '.join(TOKENIZER_FILES)})")
