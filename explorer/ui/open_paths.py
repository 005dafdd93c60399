"""What File ▸ Open, drag-and-drop and the recent-files menu do with a path.

    kind, target = classify("ckpt/dates")          # ("model", Path("ckpt/dates"))
    classify("runs/dates")                          # ("run", ...) for a run folder (explorer/runs)
    classify("corpus.tsv")                          # ("data", Path("corpus.tsv"))
    classify("Helsinki-NLP/opus-mt-en-de")          # ("model", "...") when in the local HF cache
    classify("nowhere")                             # ("error", "nowhere does not exist")

A model is a folder with config.json (our checkpoint or a Hugging Face model; the loader tells them
apart and says in one line what is wrong with either), or a file inside one (Ctrl+O's file dialog
picks files: its config.json or weights open the folder), or a model id already in the local
Hugging Face cache. Any other file is data for the data dialog.
"""

from __future__ import annotations

from pathlib import Path

MODEL_FILES = ("config.json", "model.safetensors", "pytorch_model.bin")


def classify(path: str | Path) -> tuple[str, Path | str]:
    from explorer.hf.detect import is_hf_model  # no transformers, no torch: the window stays light
    from explorer.history import is_run_folder

    path = Path(path)
    if path.is_file() and path.name in MODEL_FILES and (path.parent / "config.json").is_file():
        path = path.parent
    if path.is_dir():
        if is_run_folder(path):  # its latest checkpoint, whole history and snapshots
            return "run", path
        if not (path / "config.json").is_file():
            return "error", f"{path} is not a checkpoint folder (it has no config.json)"
        return "model", path
    if path.is_file():
        return "data", path
    if is_hf_model(str(path)):  # a model id in the local Hugging Face cache (never downloaded)
        return "model", str(path)
    return "error", f"{path} does not exist"


def recent_entry(path: str | Path) -> str:
    """How the recent-files menu keeps a path: absolute, but a cached model id as it is."""
    return str(Path(path).resolve()) if Path(path).exists() else str(path)
