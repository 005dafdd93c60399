"""torch files read as tensors only: `torch.load(weights_only=True)`, whose unpickler runs no
code, with its refusal said in one line. torch's own message advises re-running with
`weights_only=False`, the one thing never to do with a file of unknown origin: it is not passed on.
"""

from __future__ import annotations

import re
from pathlib import Path

from explorer.errors import UserError


def refusal(path: str | Path, exc: BaseException) -> UserError:
    """What a file torch's weights-only unpickler refused is not, in one line."""
    found = re.search(r"GLOBAL ([\w.]+)", str(exc))
    if found:  # a pickle that names Python code: the reason it was refused
        return UserError(f"{path}: refused: it holds Python objects ({found.group(1)}), not "
                         "plain tensors, and unpickling them could run code")
    try:
        with open(path, "rb") as file:
            pickled = file.read(1) == b"\x80"  # a pickle's protocol opcode (torch.save's own
            # files are zip archives, whose pickle names what it holds: above)
    except OSError:
        pickled = False
    if pickled:
        return UserError(f"{path}: refused: a Python pickle that is not plain tensors (it is not "
                         "unpickled, which could run code)")
    return UserError(f"{path}: not a PyTorch or safetensors file")


def load_tensors(path: str | Path):
    """The tensors and plain containers in a torch file; anything else is a one-line UserError."""
    import warnings

    import torch

    try:
        with warnings.catch_warnings():  # the unpickler's protocol notes: the refusal suffices
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure means the file cannot be trusted
        raise refusal(path, exc) from None
