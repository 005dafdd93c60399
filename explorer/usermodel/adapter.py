"""The user's module behind the interface our own models have (docs/architecture.md):

    logits = model(ids, trace=False)                 # language models: logits = user_model(ids)
    logits = model(src, tgt_in, trace=False)         # encoder-decoders: user_model(src, tgt_in)
    state = model.start(src=None, src_pad_mask=None, batch_size=1)
    logits, state, attn = model.step(tokens, state)
    state = model.reorder_state(state, index)

so explorer.decoding (greedy, beam, sampling, step-through, scoring) and the probes run unchanged.
`step` calls the user's own `encode`/`step` functions when the `Adapter` names them, else it runs
the full forward over the prefix at every step. With `trace=True` the forward runs inside
explorer.usermodel.capture, and the record becomes a seqmodels.Trace.

`state_dict()` and `load_state_dict()` are the user's module's own: checkpoints and snapshots hold
exactly its weights, under its own names.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Any, Callable

import torch
from torch import nn

from explorer.errors import UserError
from explorer.families import family_of, get_family
from explorer.usermodel.call import read_model
from explorer.usermodel.capture import RECURRENT, capture
from explorer.usermodel.families import UserModelConfig
from seqmodels.state import reorder_state
from seqmodels.trace import AttentionMap, Trace


@dataclass
class Adapter:
    """What the explorer needs to know about a user's model, all optional.

    kind: "lm" (`logits = model(ids)`) or "seq2seq" (`logits = model(src_ids, tgt_in_ids)`);
    None reads it from how many inputs `forward` takes. Logits are (B, T, V), batch first.
    encode(model, src (B, S)) -> state and step(model, tokens (B,), state) -> (logits (B, V),
    state): fast decoding (an LM's first state is None). A state's tensors have the batch first,
    or `reorder(state, index) -> state` says how beam search picks rows.
    bos / eos / pad: ids or token strings (else looked up: <bos> <sos> <s>, <eos> </s>, <pad>).
    embedding / src_embedding / head: dotted module names (else the first nn.Embedding, the second
    for a seq2seq target, and the last nn.Linear with one output per token).
    src_tokenizer: a seq2seq's source tokenizer when it differs from the target's.
    split: how a vocabulary-list tokenizer splits text ("whitespace", "chars" or a function);
    None: "chars" for a list of single characters that holds " ", else "whitespace".
    forward(model, *inputs) -> logits (B, T, V) at every position: instead of `model(*inputs)`
    (a forward that takes other arguments, or returns the last position only).
    pad_mask: the model ignores <pad> in its inputs itself, so sources of different lengths may
    share a batch (else the explorer batches equal lengths only; a forward argument it fills,
    src_mask or *key_padding_mask, says so too).
    attention: dotted module name(s) whose softmax over the last axis is attention, when it is
    computed by hand (else found where a module returns it or multiplies values by it).
    With encode and step, teacher-forced logits (scoring, probes, evaluation, training) come from
    stepping through the target, not from the model's forward, unless `forward` is given.
    """

    kind: str | None = None
    encode: Callable | None = None
    step: Callable | None = None
    reorder: Callable | None = None
    bos: int | str | None = None
    eos: int | str | None = None
    pad: int | str | None = None
    max_len: int | None = None
    embedding: str | None = None
    src_embedding: str | None = None
    head: str | None = None
    src_tokenizer: Any = None
    split: Any = None
    forward: Callable | None = None
    pad_mask: bool = False
    attention: str | list[str] | None = None


# forward arguments the explorer fills from the inputs (explorer.usermodel.call)
FILLED_MASKS = ("src_mask", "tgt_mask", "src_key_padding_mask", "tgt_key_padding_mask",
                "memory_key_padding_mask")


def infer_kind(model: nn.Module) -> str:
    """"lm" or "seq2seq" from the number of inputs the model's forward requires."""
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        raise UserError("kind: cannot read the model's forward signature; say kind='lm' or "
                        "kind='seq2seq'") from None
    required = [p for p in parameters if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.name not in FILLED_MASKS]
    if len(required) == 1:
        return "lm"
    if len(required) == 2:
        return "seq2seq"
    raise UserError(f"kind: the model's forward takes {len(required)} inputs "
                    f"({', '.join(p.name for p in required)}); say kind='lm' (logits = model(ids)) "
                    "or kind='seq2seq' (logits = model(src_ids, tgt_in_ids)), and "
                    "forward=lambda model, *inputs: ... if it takes other arguments")


class UserModel(nn.Module):
    """Common part: the user's module (`.inner`), the config, embeddings and head by name."""

    def __init__(self, inner: nn.Module, config: UserModelConfig, adapter: Adapter) -> None:
        super().__init__()
        self.inner = inner
        self.config = config
        self.adapter = adapter
        self.train(inner.training)
        self.reading = read_model(inner, adapter, config, family_of(config).has_source)

    @property
    def handles_padding(self) -> bool:
        """Pads in a batch leave every row's output unchanged: the adapter says so, or the forward
        takes a source mask the explorer fills (explorer.decoding.batching reads this)."""
        return bool(self.adapter.pad_mask) or self.reading.source_mask

    @property
    def notes(self) -> list[str]:
        """One line per choice made in reading the model (how its forward is called)."""
        return list(self.reading.notes)

    # -- the user's weights, under the user's names --------------------------------------------

    def state_dict(self, *args, **kwargs):
        return self.inner.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.inner.load_state_dict(state_dict, strict=strict, assign=assign)

    # -- where the analyses find things (explorer.families' stacks and embeddings) --------------

    def _named(self, path: str | None, kind: type, pick: int) -> nn.Module | None:
        if path:
            try:
                return self.inner.get_submodule(path)
            except AttributeError:
                raise UserError(f"the model has no module {path!r}") from None
        found = [m for m in self.inner.modules() if isinstance(m, kind)]
        return found[min(pick, len(found) - 1)] if found else None

    @property
    def src_embedding(self) -> nn.Module | None:
        return self._named(self.adapter.src_embedding, nn.Embedding, 0)

    @property
    def tgt_embedding(self) -> nn.Module | None:
        return self._named(self.adapter.embedding, nn.Embedding, 1)

    @property
    def embedding(self) -> nn.Module | None:
        return self._named(self.adapter.embedding, nn.Embedding, 0)

    @property
    def head(self) -> nn.Module | None:
        if self.adapter.head:
            return self._named(self.adapter.head, nn.Linear, 0)
        heads = [m for m in self.inner.modules()
                 if isinstance(m, nn.Linear) and m.out_features == self.config.vocab_size]
        return heads[-1] if heads else None

    # -- forward -----------------------------------------------------------------------------------

    def _run(self, *inputs, trace: bool):
        if not trace:
            return self.reading.logits(self.inner, inputs)
        with capture(self.inner, named=self.adapter.attention) as record:
            logits = self.reading.logits(self.inner, inputs)
        return logits, to_trace(record, self.config.family, [x.shape[1] for x in inputs])

    def reorder_state(self, state, index: torch.Tensor):
        user = state.get("user")
        reordered = reorder_state({k: v for k, v in state.items() if k != "user"}, index)
        if user is not None:
            reordered["user"] = (self.adapter.reorder(user, index) if self.adapter.reorder
                                 else reorder_state(user, index))
        return reordered

    def _user_step(self, tokens: torch.Tensor, state: dict):
        """(logits (B, V), state, attention (B, L, H, Tk) or None) of one token per row."""
        named = self.adapter.attention
        if self.adapter.step is not None:
            with capture(self.inner, recurrent_replay=False, named=named) as record:
                logits, user = self.adapter.step(self.inner, tokens, state.get("user"))
            return logits, {**state, "user": user}, _step_attention(record)
        ids = torch.cat([state["ids"], tokens[:, None]], dim=1)  # (B, t)
        inputs = (state["src"], ids) if "src" in state else (ids,)
        with capture(self.inner, recurrent_replay=False, named=named) as record:
            logits = self.reading.newest(self.inner, inputs)  # (B, V): the newest position
        return logits, {**state, "ids": ids}, _step_attention(record)


class UserLM(UserModel):
    def forward(self, tokens, pad_mask=None, trace: bool = False):
        return self._run(tokens, trace=trace)

    def start(self, src=None, src_pad_mask=None, batch_size: int = 1):
        device = _device(self.inner)
        return {"ids": torch.zeros(batch_size, 0, dtype=torch.long, device=device), "user": None}

    def step(self, tokens, state):
        logits, state, _ = self._user_step(tokens, state)
        return logits, state, None


class UserSeq2Seq(UserModel):
    def forward(self, src, tgt_in, src_pad_mask=None, tgt_pad_mask=None, trace: bool = False):
        return self._run(src, tgt_in, trace=trace)

    def start(self, src=None, src_pad_mask=None, batch_size: int = 1):
        if src is None:
            raise ValueError("an encoder-decoder needs a source to start from")
        if self.adapter.encode is not None:
            return {"user": self.adapter.encode(self.inner, src)}
        return {"src": src, "ids": torch.zeros(src.shape[0], 0, dtype=torch.long,
                                               device=src.device)}

    def step(self, tokens, state):
        return self._user_step(tokens, state)


def wrap_model(model: nn.Module, config: UserModelConfig, adapter: Adapter) -> UserModel:
    cls = UserSeq2Seq if family_of(config).has_source else UserLM
    return cls(model, config, adapter)


def is_recurrent(model: nn.Module) -> bool:
    return any(isinstance(m, RECURRENT) for m in model.modules())


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


# -- a capture record as a seqmodels.Trace -------------------------------------------------------


def _stream_of(name: str, seq2seq: bool, order: int) -> str:
    """Which stack a recurrent module belongs to: its name says (enc / dec), else the first
    one run is the encoder."""
    if not seq2seq:
        return "lm"
    lowered = name.lower()
    if "dec" in lowered:
        return "decoder"
    if "enc" in lowered:
        return "encoder"
    return "encoder" if order == 0 else "decoder"


def _attention_kind(name: str, self_attention: bool, seq2seq: bool, query_len: int,
                    lengths: list[int]) -> str:
    if not seq2seq:
        return "decoder"
    lowered = name.lower()
    if not self_attention or "cross" in lowered:
        return "cross"
    if "enc" in lowered:
        return "encoder"
    if "dec" in lowered:
        return "decoder"
    return "encoder" if query_len == lengths[0] and query_len != lengths[-1] else "decoder"


def to_trace(record, family: str, lengths: list[int]) -> Trace:
    """Attention maps numbered per kind in the order they ran (a module called once per decoder
    step has its rows joined), recurrent layers as `stream.l{k}` (k counts on across the modules
    of one stream), Transformer blocks as `stream.layer{k}`."""
    seq2seq = get_family(family).has_source
    trace = Trace()
    for kind, weights in _joined_attention(record, seq2seq, lengths):
        layer = sum(1 for m in trace.attention if m.kind == kind)
        trace.attention.append(AttentionMap(kind, layer, weights))
    layers: dict[str, int] = {}
    for order, (name, replays) in enumerate(_grouped(record.recurrent).items()):
        stream = _stream_of(name, seq2seq, order)
        first = layers.get(stream, 0)
        for short in replays[0].trace.hidden:  # "l0", "l0_reverse", "l1", ...
            number, _, reverse = short[1:].partition("_")
            label = f"{stream}.l{first + int(number)}{'_' + reverse if reverse else ''}"
            trace.hidden[label] = [h for r in replays for h in r.trace.hidden[short]]
            if short in replays[0].trace.cell:
                trace.cell[label] = [c for r in replays for c in r.trace.cell[short]]
            if short in replays[0].trace.gates:
                trace.gates[label] = {g: [v for r in replays for v in r.trace.gates[short][g]]
                                      for g in replays[0].trace.gates[short]}
        layers[stream] = first + max(int(s[1:].partition("_")[0]) for s in
                                     replays[0].trace.hidden) + 1
    for index, (name, output) in enumerate(record.blocks):
        stream = "decoder" if not seq2seq or "Decoder" in name or "dec" in name.lower() else "encoder"
        count = sum(1 for key in trace.hidden if key.startswith(f"{stream}.layer"))
        trace.hidden[f"{stream}.layer{count}"] = [output]
    return trace


def _grouped(records) -> dict[str, list]:
    groups: dict[str, list] = {}
    for item in records:
        groups.setdefault(item.name, []).append(item)
    return groups


def _joined_attention(record, seq2seq: bool, lengths: list[int]):
    """(kind, weights (B, H, Tq, Tk)) per attention module; the calls of a module run one query
    at a time (a decoder loop) are joined along the queries."""
    for name, calls in _grouped(record.attention).items():
        if len(calls) > 1 and all(c.weights.shape[2] == 1 for c in calls) and len(
                {c.weights.shape[3] for c in calls}) == 1:
            joined = [replace(calls[0], weights=torch.cat([c.weights for c in calls], dim=2))]
        else:
            joined = calls
        for call in joined:
            yield (_attention_kind(name, call.self_attention, seq2seq, call.weights.shape[2],
                                   lengths), call.weights)


def _step_attention(record) -> torch.Tensor | None:
    """The cross-attention of the newest position, (B, L, H, Tk), from a decoding step's record:
    per cross-attention module, the last row of its last call (a decoder that loops over positions
    calls it once per position)."""
    last: dict[str, torch.Tensor] = {}
    for call in record.attention:
        if not call.self_attention:
            last[call.name] = call.weights[:, :, -1]  # (B, H, Tk)
    return torch.stack(list(last.values()), dim=1) if last else None
