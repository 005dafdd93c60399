"""What an attribution is computed on: the model inputs, the embedding modules that read them, and
the output tokens (rows) whose log-probability is explained.

    item = attribution_input(workspace, source, target)   # any family
    item.inputs          # positional arguments of model.forward, batch of one
    item.sides           # [Side("source", ...), Side("prefix", ...)] in the order the model embeds
    item.rows            # [Row(position, token_id, label)]: one per output token

Sides are the embedding layers whose tables the activation provider names (`embeddings`:
"source", "input"), never found by family name. For T5 and Marian the source side is the
encoder's input.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from explorer.data.tokenizers import VISIBLE_MARKS
from explorer.errors import UserError
from explorer.analysis.activations import provider_for
from explorer.families import family_of
from seqmodels.config import MASK_ID, PAD_ID, UNK_ID


@dataclass
class Side:
    name: str  # "source" (an encoder's input), "prefix" (a decoder's / LM's input) or "tokens" (BERT)
    input_index: int  # which model input it embeds
    # the token embedding: the layers holding its table (a tied copy may be the one called);
    # the output of the call that embeds this side is what is attributed
    modules: tuple[torch.nn.Module, ...]
    labels: list[str]
    causal: bool  # a column j can only influence outputs at positions >= j


@dataclass
class Row:
    position: int  # index into the logits' time axis
    token_id: int
    label: str


@dataclass
class AttributionInput:
    inputs: tuple  # (1, T) id tensors, model.forward's positional arguments
    sides: list[Side]
    rows: list[Row]
    pad_ids: list[int]  # per side: the <pad> id its baseline uses
    unk_ids: list[int]  # per side: the <unk> id

    @property
    def columns(self) -> list[str]:
        return [label for side in self.sides for label in side.labels]


def embedding_modules(model) -> list[tuple[str, int, tuple[torch.nn.Module, ...]]]:
    """(side, model input index, the embedding layers of its table) in the order the forward
    pass embeds: the tables the activation provider names ("source", "input"; a model that names
    no source embeds it with its one shared table, as T5 and Marian do)."""
    family = family_of(model)
    weights = provider_for(model).embeddings(model)
    names = [("source", 0, "source"), ("prefix", 1, "input")] if family.has_source else [
        ("tokens" if family.masked_lm else "prefix", 0, "input")]
    return [(side, index, _embeddings_with(model, weights.get(key, weights["input"])))
            for side, index, key in names]


def _embeddings_with(model, weight: torch.Tensor) -> tuple[torch.nn.Module, ...]:
    """Every embedding layer whose table is `weight` (a tied output head is a Linear: not one)."""
    found = tuple(module for module in model.modules()
                  if isinstance(module, torch.nn.Embedding) and module.weight is weight)
    if not found:
        raise UserError("this model's token embedding is not an embedding layer: nothing to attribute to")
    return found


def _special_ids(workspace, side: str) -> tuple[int, int]:
    """(<pad>, <unk>) of the tokenizer that reads this side."""
    tokenizer = (workspace.src_tokenizer or workspace.tokenizer) if side == "source" else workspace.tokenizer
    hf = getattr(tokenizer, "hf", None)
    if hf is None:
        return PAD_ID, UNK_ID
    pad = hf.pad_token_id if hf.pad_token_id is not None else workspace.model.config.pad_id
    unk = hf.unk_token_id if hf.unk_token_id is not None else pad
    return pad, unk


def token_id(tokenizer, token: str) -> int:
    """The id of one token of the vocabulary; a one-line UserError when it is not in it."""
    index = tokenizer.token_to_id(token)
    # our tokenizers answer an unknown token with <unk>'s id; a label may show "␣" for "▁" or "Ġ"
    if index is not None and tokenizer.id_to_token(index) not in (token, token.translate(VISIBLE_MARKS)):
        index = None
    if index is None:
        raise UserError(f"the token {token!r} is not in the model's vocabulary")
    return index


def attribution_input(workspace, source: str, target: str = "") -> AttributionInput:
    """Encode one example the way the probe does (`family.encode_probe`). An encoder-decoder with
    no target explains its own greedy output; a masked LM explains what it fills in at each mask
    (every position when there is none)."""
    model = workspace.model
    family = family_of(model)
    reading = getattr(model, "reading", None)  # a user's model (explorer.usermodel.call)
    if reading is not None and reading.stepped:
        raise UserError("attribution needs the tokens embedded in one forward pass, and this model "
                        "embeds one token per step (its Adapter's step): give "
                        "explorer.Adapter(forward=lambda model, *inputs: ...) returning (B, T, V)")
    if family.has_source and not target.strip():
        target = _greedy_text(workspace, source)
    try:
        encoded = family.encode_probe(workspace, source, target)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    labels = encoded.labels
    sides = []
    for name, index, modules in embedding_modules(model):
        side_labels = labels["source"] if name == "source" else labels.get("target_in", labels.get("tokens"))
        sides.append(Side(name, index, modules, list(side_labels), causal=name == "prefix"))
    targets = encoded.targets[0].tolist()
    if family.masked_lm:
        rows = _masked_rows(workspace, encoded)
    else:
        # a language model reads every token typed; the last has no next token to explain (< 0)
        out_labels = labels.get("target_out") or labels["tokens"][1:] + [""]
        rows = [Row(p, t, str(out_labels[p])) for p, t in enumerate(targets) if t >= 0]
    if not rows:
        raise UserError("there is no output token to explain in this input")
    specials = [_special_ids(workspace, side.name) for side in sides]
    return AttributionInput(encoded.inputs, sides, rows, [s[0] for s in specials],
                            [s[1] for s in specials])


def _greedy_text(workspace, source: str) -> str:
    from explorer.decoding.scoring import encode_context
    from explorer.decoding.search import greedy
    from explorer.decoding.incremental import inference

    context = encode_context(workspace, source)
    with inference(workspace.model):
        hypothesis = greedy(workspace.model, context, tokenizer=workspace.tokenizer)
    return hypothesis.text


def _masked_rows(workspace, encoded) -> list[Row]:
    """A masked LM's rows: its most probable token at every masked position (every position
    when nothing is masked)."""
    tokens = encoded.inputs[0]
    mask_id = getattr(workspace.model.config, "mask_id", None)
    mask_id = MASK_ID if mask_id is None else mask_id
    positions = (tokens[0] == mask_id).nonzero().flatten().tolist() or list(range(tokens.size(1)))
    model = workspace.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = model(tokens.to(next(model.parameters()).device))
    finally:
        model.train(was_training)
    best = logits[0, positions].argmax(-1).tolist()
    labels = workspace.tokenizer.tokens(best)
    return [Row(p, t, str(label)) for p, t, label in zip(positions, best, labels)]
