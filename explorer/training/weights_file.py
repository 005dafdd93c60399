"""A checkpoint's model.safetensors, checked before a single weight is allocated.

A crafted or damaged file must end in a one-line UserError, never in a crash or a multi-GB
allocation. So the header is read by hand first (its length, every tensor's dtype, shape and byte
range against the file's real size), then the model the config describes is built on the "meta"
device (shapes only, no memory) and compared with the header, tensor by tensor. Only then is the
real model built and filled.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from explorer.errors import UserError, first_line
from explorer.shapes import shapes_only

MAX_HEADER_BYTES = 100_000_000  # safetensors' own limit
MAX_EXTRA_BYTES = 256 * 2**20  # buffers a model makes itself (positional tables), beyond the file
DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
    "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}
TORCH_DTYPES = {"torch.float64": "F64", "torch.float32": "F32", "torch.float16": "F16",
                "torch.bfloat16": "BF16", "torch.int64": "I64", "torch.bool": "BOOL"}


def _is_size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_header(path: Path) -> tuple[dict[str, tuple[str, list[int]]], dict[str, str]]:
    """{tensor name: (dtype, shape)} and the metadata (tied-weight aliases) of a safetensors
    file, every byte range checked against the file's length."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as file:
            prefix = file.read(8)
            if len(prefix) < 8:
                raise UserError(f"{path}: truncated ({size} bytes, not even a header length)")
            length = int.from_bytes(prefix, "little")
            if length > min(size - 8, MAX_HEADER_BYTES):
                raise UserError(f"{path}: truncated or corrupt (a header of {length:,} bytes in "
                                f"a file of {size:,})")
            raw = file.read(length)
    except FileNotFoundError:
        raise UserError(f"{path.parent}: the checkpoint has no {path.name}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise UserError(f"{path}: corrupt header (not JSON)") from None
    if not isinstance(header, dict):
        raise UserError(f"{path}: corrupt header (not a JSON object)")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
    ):
        raise UserError(f"{path}: corrupt header (bad __metadata__)")
    data_bytes = size - 8 - length
    tensors = {}
    for name, info in header.items():
        if not isinstance(info, dict):
            raise UserError(f"{path}: corrupt header entry for {name!r}")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPE_BYTES:
            raise UserError(f"{path}: tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not all(_is_size(d) for d in shape):
            raise UserError(f"{path}: tensor {name!r} has a bad shape {shape!r}")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(_is_size(o) for o in offsets) or offsets[0] > offsets[1]):
            raise UserError(f"{path}: tensor {name!r} has bad data offsets {offsets!r}")
        needed = math.prod(shape) * DTYPE_BYTES[dtype]
        if offsets[1] - offsets[0] != needed:
            raise UserError(f"{path}: tensor {name!r} of shape {shape} needs {needed:,} bytes, "
                            f"the header gives it {offsets[1] - offsets[0]:,}")
        if offsets[1] > data_bytes:
            raise UserError(f"{path}: truncated (tensor {name!r} ends at byte {offsets[1]:,} of "
                            f"data, the file holds {data_bytes:,})")
        tensors[name] = (dtype, shape)
    return tensors, metadata


def check_against_config(path: Path, model_config) -> None:
    """Raise UserError unless the file holds exactly the tensors `model_config`'s model has."""
    from seqmodels.config import build_model

    tensors, aliases = read_header(path)
    layers = getattr(model_config, "num_layers", 1)
    if isinstance(layers, int) and layers > len(tensors):  # each layer owns tensors of its own
        raise UserError(f"{path}: the config asks for {layers} layers, the file holds only "
                        f"{len(tensors)} tensors")
    try:
        with shapes_only():  # shapes without memory
            model = build_model(model_config)
    except Exception as exc:  # noqa: BLE001 - a config the model code rejects
        reason = first_line(exc)
        raise UserError(f"{path.parent}: the model config is not buildable ({reason})") from None
    expected = model.state_dict()
    for name, (dtype, shape) in tensors.items():
        if name not in expected:
            raise UserError(f"{path}: holds tensor {name!r}, which a {model_config.family} model "
                            "with this config does not have")
        want = expected[name]
        if list(want.shape) != shape:
            raise UserError(f"{path}: tensor {name!r} has shape {shape}, the config needs "
                            f"{list(want.shape)}")
        if TORCH_DTYPES.get(str(want.dtype), str(want.dtype)) != dtype:
            raise UserError(f"{path}: tensor {name!r} is {dtype}, the model needs "
                            f"{TORCH_DTYPES.get(str(want.dtype), want.dtype)}")
    missing = [n for n in expected if n not in tensors and aliases.get(n) not in tensors]
    if missing:
        raise UserError(f"{path}: lacks tensor {missing[0]!r} (and {len(missing) - 1} more)"
                        if len(missing) > 1 else f"{path}: lacks tensor {missing[0]!r}")
    extra = sum(b.numel() * b.element_size() for n, b in model.named_buffers() if n not in expected)
    if extra > MAX_EXTRA_BYTES:
        raise UserError(f"{path.parent}: the model config asks for {extra / 2**30:.1f} GiB of "
                        "tables beyond its weights (max_len too large?)")


def memory_limit_bytes() -> int:
    """Half the machine's memory: a model bigger than this would swap or be killed."""
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # not on this platform
        return 8 * 2**30


def check_field_types(model_config) -> None:
    """Types and ranges of a model config from JSON or --config, as its fields declare them
    (seqmodels.settings: sizes, probabilities in [0, 1), booleans, names)."""
    from seqmodels.settings import check_setting

    refused = check_setting(model_config)
    if refused:
        name, value, why = refused
        raise UserError(f"model field {name!r} cannot be {value!r} ({why})")


def check_model_size(model_config) -> None:
    """Refuse, before allocating, a model of wrongly typed fields or whose weights and tables
    would not fit in memory (`--context 100000000` asks for a 25 GB positional table)."""
    from seqmodels.config import build_model

    check_field_types(model_config)

    try:
        with shapes_only():
            model = build_model(model_config)
    except (TypeError, ValueError, RuntimeError) as exc:  # e.g. dropout 5, negative sizes
        reason = first_line(exc)
        raise UserError(f"cannot build this model: {reason}") from None
    tensors = [*model.parameters(), *model.buffers()]
    needed = sum(t.numel() * t.element_size() for t in tensors)
    limit = memory_limit_bytes()
    if needed > limit:
        raise UserError(f"the model would need {needed / 1e9:.1f} GB for its weights and tables "
                        f"(at most {limit / 1e9:.1f} GB here); choose a smaller context, width "
                        "or depth")
