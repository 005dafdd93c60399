"""Open a Hugging Face model folder (or a cached model id) as a Workspace, offline.

transformers' own classes load it (`local_files_only=True`, safetensors preferred, a `.bin` only
through torch's weights-only unpickler, never `trust_remote_code`), then explorer.hf.adapter gives
it the decoding interface of our models and explorer.hf.tokenizer the tokenizer interface.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

from explorer.errors import UserError, first_line
from explorer.hf.detect import HF_EXTRA, check_folder, hf_model_folder, read_hf_config, weight_files


def _one_line(exc: Exception) -> str:
    """The whole message on one line: pydantic-style errors name the field on their first line
    and say what is wrong with it on the next ("Field 'n_layer' expected int, got str")."""
    text = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return text[:300] if text else type(exc).__name__


def _check_config(folder: Path):
    """transformers' own validation of config.json, so a bad field is reported as the file's
    (it is read again by the tokenizer, whose error named neither file nor value); -> the config,
    which the model is then built from (not parsed a second time)."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(folder), local_files_only=True,
                                          trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 - a field of the wrong type or value
        raise UserError(f"{folder / 'config.json'}: {_one_line(exc)}") from None


def _missing_tokenizer_files(folder: Path, transformers) -> str:
    """", missing vocab.json" when the tokenizer class that tokenizer_config.json names reads
    files the folder lacks (a Marian folder without vocab.json failed on a None path)."""
    try:
        import json

        class_name = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")
                                ).get("tokenizer_class") or ""
    except (OSError, ValueError, AttributeError):
        return ""
    tokenizer_class = getattr(transformers, class_name, None)
    files = getattr(tokenizer_class, "vocab_files_names", None) or {}
    missing = [f for f in files.values() if isinstance(f, str) and not (folder / f).exists()]
    return (f"; the folder lacks {', '.join(missing)}, which {class_name} reads" if missing
            else "")


def import_transformers(name: str):
    """transformers with the hub kept offline; a missing [hf] extra is a one-line UserError."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach the network, even for a cached id
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import transformers
    except ImportError:
        raise UserError(f"{name}: a Hugging Face model; opening it needs the [hf] extra: "
                        f"{HF_EXTRA}") from None
    # its own deprecations (5.24: "`past_key_values` is deprecated ... Use `cache` instead", twice
    # per command) are between transformers and its callers' API, not the user's business
    warnings.filterwarnings("ignore", category=FutureWarning,
                            message=r".* is deprecated and will be removed in version")
    transformers.utils.logging.set_verbosity_error()  # its notes would drown our one-line errors
    transformers.utils.logging.disable_progress_bar()
    return transformers


def _positions(hf_config) -> int | None:
    """How many positions a learned or sinusoidal table holds; None for relative positions (T5)."""
    if getattr(hf_config, "relative_attention_num_buckets", None) is not None:
        return None
    for attribute in ("n_positions", "max_position_embeddings"):
        value = getattr(hf_config, attribute, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _model_config(hf_model, family, tokenizer, folder: Path):
    from explorer.hf.adapter import HFModelConfig

    config = hf_model.config
    generation = getattr(hf_model, "generation_config", None)  # masked LMs have none
    eos = getattr(generation, "eos_token_id", None)
    eos = getattr(config, "eos_token_id", None) if eos is None else eos
    eos = tokenizer.eos_token_id if eos is None else eos
    eos = eos[0] if isinstance(eos, (list, tuple)) else eos  # several eos: the first ends hypotheses
    if family.source:
        start = getattr(config, "decoder_start_token_id", None)
        if start is None:
            start = getattr(generation, "decoder_start_token_id", None)
    else:
        start = getattr(config, "bos_token_id", None)
        start = tokenizer.bos_token_id if start is None else start
    pad = next((p for p in (getattr(config, "pad_token_id", None), tokenizer.pad_token_id, eos)
                if p is not None), 0)
    if start is None:  # no bos (or decoder start) named: start like GPT-2, from the eos
        start = eos if eos is not None else pad
    positions = _positions(config)
    return HFModelConfig(
        family=family.name, model_type=config.model_type,
        vocab_size=hf_model.get_output_embeddings().weight.shape[0], max_len=positions,
        max_src_len=positions if not family.lm else None, start_id=start, eos_id=eos,
        pad_id=pad, mask_id=tokenizer.mask_token_id, path=str(folder),
    )


def freeze_unsaved_parameters(hf_model) -> None:
    """Parameters `save_pretrained` leaves out (`_keys_to_ignore_on_save`: Marian's sinusoidal
    position tables) are fixed by construction, so they must not train: transformers 5.24 loads
    them with requires_grad=True (the class freezes them, the loader's re-made tensor does not),
    and a fine-tune then changed weights the saved folder silently reset."""
    patterns = getattr(hf_model, "_keys_to_ignore_on_save", None) or []
    for name, parameter in hf_model.named_parameters():
        if any(re.search(pattern, name) for pattern in patterns):
            parameter.requires_grad_(False)


def load_tokenizer(folder: Path, hf_config, name: str, transformers):
    """The folder's tokenizer, as AutoTokenizer loads it (`hf_config`: the validated config)."""
    from transformers import AutoTokenizer

    from explorer.hf.tokenizer_files import saved_added_tokens

    added_tokens = saved_added_tokens(folder)  # tokenizer.json then parsed once, not twice
    try:
        with warnings.catch_warnings():  # e.g. Marian's "Recommended: pip install sacremoses"
            warnings.simplefilter("ignore")
            return AutoTokenizer.from_pretrained(
                str(folder), config=hf_config, local_files_only=True, trust_remote_code=False,
                **({} if added_tokens is None else {"added_tokens_decoder": added_tokens}))
    except Exception as exc:  # noqa: BLE001 - broken or missing tokenizer files
        raise UserError(f"{name}: cannot load the tokenizer ({_one_line(exc)})"
                        f"{_missing_tokenizer_files(folder, transformers)}") from None


def open_hf_model(path):
    """The Workspace of the Hugging Face model at `path` (a folder, or a model id in the cache)."""
    from explorer.hf import adapter as adapters
    from explorer.hf.families import hf_family_of
    from explorer.hf.fast_load import from_pretrained
    from explorer.hf.tokenizer import HFTokenizer
    from explorer.workspace import Workspace

    name = str(path)
    folder = hf_model_folder(path)
    if folder is None:
        raise UserError(f"{name}: not a Hugging Face model folder (config.json with model_type) "
                        "nor a model id in the local Hugging Face cache")
    config = read_hf_config(folder)
    check_folder(folder, config, name)
    transformers = import_transformers(name)
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    if config["model_type"] not in CONFIG_MAPPING_NAMES:
        raise UserError(f"{name}: unknown model_type {config['model_type']!r} (transformers "
                        f"{transformers.__version__} does not know it)")
    family = hf_family_of(config, name)
    hf_config = _check_config(folder)
    hf_tokenizer = load_tokenizer(folder, hf_config, name, transformers)
    safetensors, _ = weight_files(folder)
    auto_class = getattr(transformers, family.auto_class)
    try:
        hf_model = from_pretrained(
            auto_class, str(folder), config=hf_config, local_files_only=True, trust_remote_code=False,
            use_safetensors=bool(safetensors), weights_only=True,
            attn_implementation="eager",  # weights available; the adapter picks sdpa where it can
        )
    except Exception as exc:  # noqa: BLE001 - wrong shapes, a pickle that is not plain tensors
        if "weights_only" in str(exc):  # torch's refusal: its advice to lift it is not passed on
            from explorer.tensor_file import refusal

            _, bins = weight_files(folder)
            raise refusal(bins[0] if bins else folder, exc) from None
        raise UserError(f"{name}: cannot load the model ({first_line(exc)})") from None
    hf_model.eval()
    freeze_unsaved_parameters(hf_model)
    model_config = _model_config(hf_model, family, hf_tokenizer, folder)
    model = getattr(adapters, family.adapter)(hf_model, model_config)
    tokenizer = HFTokenizer(hf_tokenizer, eos_id=model_config.eos_id)
    return Workspace(model=model, tokenizer=tokenizer,
                     src_tokenizer=tokenizer if family.source else None)
