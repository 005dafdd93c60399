"""Argument types shared by the sub-commands."""

from __future__ import annotations

import argparse


def utf8_text(value: str) -> str:
    """A text argument. Python keeps bytes that are not UTF-8 as lone surrogates; a model would see
    them as <unk> tokens without a word, so they are refused (file paths, which may hold such
    bytes, do not use this type)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"{value.encode('utf-8', 'surrogateescape')!r} is not valid UTF-8") from None
    return value
