"""One output token picked for the attribution view, from a decoded output (step-through
decoding, a beam-tree node, the compare panel).

    pick = pick_token(workspace, source, output_ids, origin="beam tree")
    pick.source, pick.target   # what the probe runs on (teacher-forced on the output so far)
    pick.row                   # the attribution row of the picked token (explain.ExplainRequest.rows)

The picked token is the last of `output_ids`. An encoder-decoder explains it teacher-forced on the
output before it (row = its position in the output); a language model reads the prompt and the
output as one text, and the row that predicts the picked token is the one before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from explorer.errors import UserError
from explorer.families import family_of
from seqmodels.config import EOS_ID


@dataclass(frozen=True)
class TokenPick:
    source: str
    target: str
    row: int  # index into the attribution's rows (its output tokens)
    token: str  # the picked token, for the view's caption
    origin: str  # where it was picked: "step-through", "beam tree", "compare"


def pick_token(workspace, source: str, output_ids: list[int], origin: str) -> TokenPick:
    """The probe input and attribution row that explain the last token of `output_ids`."""
    if not output_ids:
        raise UserError("nothing decoded yet: there is no output token to explain")
    model = workspace.model
    family = family_of(model)
    if family.masked_lm:
        raise UserError("a masked language model decodes nothing: pick a masked position in the probe")
    eos = getattr(model.config, "eos_id", EOS_ID)
    ids = [int(i) for i in output_ids]
    text_ids = ids[:-1] if ids[-1] == eos else ids  # an <eos> is never written as text
    token = str(workspace.tokenizer.tokens([ids[-1]])[0])
    if family.has_source:
        return TokenPick(source, workspace.tokenizer.decode(text_ids), len(ids) - 1, token, origin)
    if ids[-1] == eos:
        raise UserError("a language model's <eos> ends the text: pick a token before it")
    prompt = workspace.tokenizer.encode(source)
    row = len(prompt) + len(text_ids) - 2
    if row < 0:
        raise UserError("the first token has nothing before it to explain it: pick a later one")
    return TokenPick(workspace.tokenizer.decode(prompt + text_ids), "", row, token, origin)
