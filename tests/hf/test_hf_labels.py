"""GPT-2's and Marian's token labels show a visible space mark ("␣", as the char tokenizer's),
never the tokenizer's own "Ġ" or "▁", in the probe's panels and in decoding."""

from __future__ import annotations

import pytest

from explorer.analysis.probe import probe
from explorer.decoding.scoring import encode_context
from explorer.decoding.search import greedy
from explorer.errors import UserError

TEXT = "the cat sat on the mat"


@pytest.mark.parametrize("name, mark", [("gpt2", "Ġ"), ("marian", "▁")])
def test_labels_show_a_visible_space_mark(hf_workspace, name, mark):
    workspace = hf_workspace(name)
    hf = workspace.tokenizer.hf
    ids = hf(TEXT)["input_ids"]
    raw = hf.convert_ids_to_tokens(ids)  # the tokenizer's own strings: the reference
    assert any(mark in token for token in raw), "this tokenizer marks spaces inside its tokens"
    labels = workspace.tokenizer.tokens(ids)
    assert labels == [token.replace(mark, "␣") for token in raw]

    snapshot = probe(workspace, TEXT, TEXT)
    shown = {label for attention in snapshot.attention for label in attention.rows + attention.cols}
    assert any(label.startswith("␣") for label in shown)  # a word start, marked
    decoded = greedy(workspace.model, encode_context(workspace, TEXT), max_len=6,
                     tokenizer=workspace.tokenizer)
    for label in [*shown, *decoded.tokens]:
        assert "Ġ" not in label and "▁" not in label, label


@pytest.mark.parametrize("name, mark", [("gpt2", "Ġ"), ("marian", "▁")])
def test_a_token_given_as_its_label_is_found(hf_workspace, name, mark):
    """A contrast or a forced token copied from a label ("␣cat") is the tokenizer's own token."""
    from explorer.analysis.attribution_input import token_id

    tokenizer = hf_workspace(name).tokenizer
    raw = next(t for t in tokenizer.hf.convert_ids_to_tokens(tokenizer.hf(TEXT)["input_ids"]) if t.startswith(mark))
    expected = tokenizer.hf.convert_tokens_to_ids(raw)
    assert token_id(tokenizer, raw.replace(mark, "␣")) == token_id(tokenizer, raw) == expected
    with pytest.raises(UserError, match="not in the model's vocabulary"):
        token_id(tokenizer, "␣no-such-token-here")
