"""The longest input a model is given. Longer text is refused in one line before it is tokenized
or run, so memory stays bounded by the batch whatever the input (a 20 MB line included): without
a bound an RNN's trace and attention grew with the source, past 20 GB on one such line."""

from __future__ import annotations

from explorer.errors import UserError
from explorer.families import family_of

# tokens, for models without a position table (RNNs, T5's relative bias): their memory grows with
# the input too (attention over the source, hidden states, the trace), so they get a cap as well
UNBOUNDED_LIMIT = 4096
# checked before tokenizing, which alone would take gigabytes on a huge line: no tokenizer here
# averages tokens longer than this many characters
CHARS_PER_TOKEN = 32


def input_limit(model) -> int:
    """The most tokens `model` reads in one input: its positions, or UNBOUNDED_LIMIT."""
    family = family_of(model)
    positions = family.max_len(model.config) if family.has_positions else None
    return positions or UNBOUNDED_LIMIT


def check_text(model, text: str | None, what: str = "the input") -> None:
    """A UserError when `text` is too long to even tokenize for `model`."""
    limit = input_limit(model)
    if text is not None and len(text) > limit * CHARS_PER_TOKEN:
        raise UserError(f"{what} has {len(text):,} characters, far more than the model reads "
                        f"({limit} tokens at most); shorten or split it")


def check_ids(model, ids, what: str = "the input") -> None:
    """A UserError when `ids` has more tokens than `model` reads."""
    limit = input_limit(model)
    if len(ids) > limit:
        raise UserError(f"{what} has {len(ids):,} tokens, more than the model reads ({limit} at "
                        "most); shorten or split it")
