"""The decoding settings every decoding view shares: one dataclass, one set of defaults and limits.

The beam tree, step-through and compare panels all edit a `DecodeSettings` through the same form
(explorer/ui/panels/decode_form.py), so a width, α or max length means the same thing, and starts
at the same value, wherever it is set.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

# name -> (lowest, highest) a user may choose
LIMITS = {
    "beam_size": (1, 16),
    "alpha": (0.0, 3.0),
    "max_len": (1, 200),
    "nbest": (1, 16),
    "temperature": (0.05, 5.0),
    "top_k": (0, 1000),
    "top_p": (0.01, 1.0),
    "seed": (0, 2**31 - 1),
}


@dataclass(frozen=True)
class DecodeSettings:
    beam_size: int = 4  # hypotheses kept at every step (1 = greedy)
    alpha: float = 0.6  # length penalty: rank by score / ((5 + |Y|) / 6) ** alpha (GNMT's 0.6)
    max_len: int = 40  # output tokens at most
    nbest: int = 3  # finished hypotheses numbered in the beam tree
    temperature: float = 1.0  # sampling: < 1 sharpens, > 1 flattens
    top_k: int = 0  # sampling among the k most probable tokens (0 = all)
    top_p: float = 1.0  # nucleus: the smallest set of tokens whose probability reaches p
    seed: int = 0  # the same seed replays the same samples

    def __post_init__(self) -> None:
        for field in fields(self):
            low, high = LIMITS[field.name]
            value = getattr(self, field.name)
            if not low <= value <= high:
                raise ValueError(f"{field.name} = {value} is out of range ({low} to {high})")
