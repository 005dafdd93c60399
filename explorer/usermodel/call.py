"""How the explorer calls the user's forward and reads what it returns.

    reading = read_model(inner, adapter, config)   # once: a probe forward says how to call it
    logits = reading.logits(inner, inputs)         # (B, T, V) at every position (teacher-forced)
    logits = reading.newest(inner, inputs)         # (B, V) of the last position (decoding)
    reading.notes                                  # one line per choice it made, for the user
    reading.attention, reading.why_no_attention    # where attention was seen, or why none was

What it handles, as people write models:
* masks the forward takes, filled from the <pad> ids: The Annotated Transformer's
  `forward(src, tgt, src_mask, tgt_mask)` ((B, 1, S) and (B, T, T), True = attend), torch's
  `*_key_padding_mask` ((B, S), True = pad) with a causal `tgt_mask` (T, T);
* a forward that returns the decoder's states and a `generator` module that maps them to
  (log-)probabilities (The Annotated Transformer): the generator is applied;
* logits at the last position only unless `targets=` is given (nanoGPT): targets are given when
  every position is needed; without such an argument, `Adapter(forward=...)` is named in one line;
* `Adapter(encode=, step=)` without `forward=`: teacher-forced logits by stepping through the
  target, so a `forward(src, trg, teacher_forcing_ratio)` is never called.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import torch
from torch import nn

from explorer.errors import UserError

PROBE_BATCH, PROBE_LENGTH, PROBE_SOURCE = 2, 3, 4  # distinct sizes: a time-major result shows


@dataclass
class Reading:
    seq2seq: bool
    pad_id: int
    adapter: object
    masks: dict[str, str] = field(default_factory=dict)  # argument -> how it is filled
    targets: bool = False  # pass targets= for every position
    last_only: bool = False  # the forward gives the last position only, and no way to get more
    generator: nn.Module | None = None
    attention: list[str] = field(default_factory=list)  # modules whose attention was captured
    why_no_attention: str | None = None  # the line an attention panel or `explorer check` shows
    notes: list[str] = field(default_factory=list)

    @property
    def stepped(self) -> bool:
        """Teacher-forced logits from the adapter's step (and encode), not the forward."""
        a = self.adapter
        return (a.forward is None and a.step is not None
                and (not self.seq2seq or a.encode is not None))

    @property
    def source_mask(self) -> bool:
        """The forward takes a mask of the source's pads, which the explorer fills."""
        return any(m in ("annotated_src", "src_padding", "memory_padding")
                   for m in self.masks.values())

    # -- calls ---------------------------------------------------------------------------------

    def logits(self, inner: nn.Module, inputs) -> torch.Tensor:
        """(B, T, V) at every position of the last input."""
        if self.stepped:
            return self._stepped(inner, inputs)
        if self.last_only:
            raise UserError(LAST_ONLY)
        return self._call(inner, inputs, every=True)

    def newest(self, inner: nn.Module, inputs) -> torch.Tensor:
        """(B, V): the distribution after the last position."""
        return self._call(inner, inputs, every=False)[:, -1]

    def _call(self, inner, inputs, every: bool) -> torch.Tensor:
        if self.adapter.forward is not None:
            output = self.adapter.forward(inner, *inputs)
        else:
            kwargs = {name: fill_mask(how, inputs, self.pad_id) for name, how in self.masks.items()}
            if self.targets and every:
                kwargs["targets"] = inputs[-1]
            output = inner(*inputs, **kwargs)
        logits = output_logits(output)
        return self.generator(logits) if self.generator is not None else logits

    def _stepped(self, inner, inputs) -> torch.Tensor:
        fed = inputs[-1]  # (B, T)
        state = self.adapter.encode(inner, inputs[0]) if self.seq2seq else None
        steps = []
        for position in range(fed.shape[1]):
            logits, state = self.adapter.step(inner, fed[:, position], state)  # (B, V)
            steps.append(logits)
        return torch.stack(steps, dim=1)  # (B, T, V)


LAST_ONLY = ("the model's forward returns logits at the last position only, and scoring, probes "
             "and evaluation need every position: give explorer.Adapter(forward=lambda model, "
             "*inputs: ...) returning (B, T, V)")


def fill_mask(how: str, inputs, pad_id: int) -> torch.Tensor | None:
    src, tgt = inputs[0], inputs[-1]
    if how == "annotated_src":
        return (src != pad_id).unsqueeze(-2)  # (B, 1, S): True = attend
    if how == "annotated_tgt":
        length = tgt.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=tgt.device).tril()
        return (tgt != pad_id).unsqueeze(-2) & causal  # (B, T, T)
    if how == "causal":
        return nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
    if how in ("src_padding", "memory_padding"):
        return src == pad_id  # (B, S): True = pad
    if how == "tgt_padding":
        return tgt == pad_id  # (B, T)
    return None


def output_logits(output) -> torch.Tensor:
    """The logits of what the user's forward returned: a tensor, the first of a tuple, or an
    object's `.logits`."""
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    logits = getattr(output, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    raise UserError(f"the model returned {type(output).__name__}; it must return logits "
                    "(B, T, V), or a tuple starting with them, or an object with .logits")


def _parameters(inner: nn.Module) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(inner.forward).parameters)
    except (TypeError, ValueError):
        return {}


def _masks(parameters, seq2seq: bool) -> dict[str, str]:
    if not seq2seq:
        return {}
    names = set(parameters)
    padding = {n for n in names if n.endswith("key_padding_mask")}
    if {"src_mask", "tgt_mask"} <= names and not padding:  # The Annotated Transformer
        return {"src_mask": "annotated_src", "tgt_mask": "annotated_tgt"}
    masks = {"src_key_padding_mask": "src_padding", "memory_key_padding_mask": "memory_padding",
             "tgt_key_padding_mask": "tgt_padding", "tgt_mask": "causal"}
    return {name: how for name, how in masks.items() if name in names}


def probe_inputs(config, seq2seq: bool, device) -> tuple[torch.Tensor, ...]:
    """Ids of distinct batch, source and target sizes, none of them <pad>."""
    def ids(length: int, vocab: int) -> torch.Tensor:
        usable = [i for i in range(vocab) if i != config.pad_id] or [0]
        flat = [usable[(3 + i) % len(usable)] for i in range(PROBE_BATCH * length)]
        return torch.tensor(flat, device=device).view(PROBE_BATCH, length)  # (B, length)

    if not seq2seq:
        return (ids(PROBE_LENGTH, config.vocab_size),)
    fed = ids(PROBE_LENGTH, config.vocab_size)
    fed[:, 0] = config.start_id
    return ids(PROBE_SOURCE, config.src_vocab_size or config.vocab_size), fed


def read_model(inner: nn.Module, adapter, config, seq2seq: bool) -> Reading:
    """How to call the model, from its signature and one probe forward (eval mode, no gradients;
    the mode is given back). A one-line UserError when what it returns cannot be logits."""
    parameters = _parameters(inner)
    reading = Reading(seq2seq, config.pad_id, adapter, masks=_masks(parameters, seq2seq))
    if reading.masks:
        reading.notes.append("the forward's " + ", ".join(reading.masks) + " are filled from "
                             "the <pad> ids")
    device = next(inner.parameters(), torch.empty(0)).device
    inputs = probe_inputs(config, seq2seq, device)
    was_training = inner.training
    inner.eval()
    try:
        with torch.no_grad():
            logits = _probe_call(reading, inner, inputs)
            _check_vocabulary(reading, inner, logits, config)
            if not reading.stepped and adapter.forward is None:
                _check_positions(reading, inner, inputs, logits, parameters)
    finally:
        inner.train(was_training)
    return reading


NO_ATTENTION = ("attention panels: no attention seen in a forward pass (an nn.MultiheadAttention, "
                "an F.scaled_dot_product_attention call, or a softmax over the last axis inside a "
                "submodule that returns it or weighs values with it); if the model has one, name "
                "its module: explorer.Adapter(attention='...')")


def _probe_call(reading, inner, inputs):
    from explorer.usermodel.capture import capture

    try:
        with capture(inner, recurrent_replay=False, named=reading.adapter.attention) as record:
            if reading.stepped:
                logits = reading._stepped(inner, inputs)
            else:
                logits = reading._call(inner, inputs, every=False)
        reading.attention = sorted({a.name for a in record.attention})
        reading.why_no_attention = None if record.attention else NO_ATTENTION
        return logits
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's code
        shapes = " and ".join(str(tuple(x.shape)) for x in inputs)
        how = "step" if reading.stepped else "forward"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise UserError(f"the model's {how} raised {type(exc).__name__} on ids of shape {shapes} "
                        f"(batch first): {text}") from None


def _check_vocabulary(reading, inner, logits, config) -> None:
    vocab = config.vocab_size
    if logits.dim() >= 1 and logits.shape[-1] != vocab:
        generator = getattr(inner, "generator", None)
        if isinstance(generator, nn.Module) and reading.adapter.forward is None:
            reading.generator = generator
            reading.notes.append(f"the forward returns states of size {logits.shape[-1]}; the "
                                 "model's generator maps them to the vocabulary")
            logits = generator(logits)
    if logits.dim() != 3 or logits.shape[-1] < vocab:
        what, want, shape = "forward", "(B, T, V)", tuple(logits.shape)
        if reading.stepped:  # the steps' (B, V) stacked
            what, want, shape = "step", "(B, V)", tuple(logits.shape[:1] + logits.shape[2:])
        raise UserError(f"the model's {what} returned logits of shape {shape}; expected {want} "
                        f"with V at least the tokenizer's {vocab} tokens")


def _check_positions(reading, inner, inputs, logits, parameters) -> None:
    batch, length = inputs[-1].shape
    if tuple(logits.shape[:2]) == (batch, length):
        return
    if tuple(logits.shape[:2]) == (length, batch):
        raise UserError(f"the model's forward returned time-major logits {tuple(logits.shape)} "
                        "for batch-first ids: give explorer.Adapter(forward=lambda model, *inputs:"
                        " ...) that returns (B, T, V)")
    if logits.shape[0] == batch and logits.shape[1] < length:
        if "targets" in parameters:
            reading.targets = True
            every = reading._call(inner, inputs, every=True)
            if tuple(every.shape[:2]) == (batch, length):
                reading.notes.append(
                    f"the forward returns logits at {logits.shape[1]} of {length} positions "
                    "without targets; the explorer passes targets= where it needs every position")
                return
            reading.targets = False
        reading.last_only = True
        reading.notes.append(LAST_ONLY)
        return
    raise UserError(f"the model's forward returned logits of shape {tuple(logits.shape)} for ids "
                    f"of shape {tuple(inputs[-1].shape)}; expected (B, T, V) = "
                    f"({batch}, {length}, V)")
