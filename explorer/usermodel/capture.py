"""What happens inside a user's torch module, recorded by forward hooks attached only while asked.

    with capture(model, recurrent_replay=True) as record:
        logits = model(*inputs)
    record.attention   # [CapturedAttention(name, weights (B, H, Tq, Tk), self_attention)]
    record.recurrent   # [CapturedRecurrent(name, trace of seqmodels.RNN, batch_first)]
    record.blocks      # [(name, output (B, T, D))] of every nn.TransformerEncoder/DecoderLayer

* every torch.nn.MultiheadAttention: a pre-hook asks it for per-head weights (need_weights=True,
  average_attn_weights=False); the forward hook keeps them and hands the caller what it asked for
  (the head average, or None);
* F.scaled_dot_product_attention, called anywhere: a TorchFunctionMode recomputes
  softmax(QKᵀ·scale + mask) beside the call (the call itself runs unchanged);
* attention written by hand inside a module of the user's (`softmax(q @ kᵀ / √d)`): a softmax
  over the last axis whose output the module returns, or multiplies into values (through dropout
  and reshapes), is taken as (B, H, Tq, Tk) weights; inside a module named in `named` every such
  softmax is;
* torch.nn.RNN/GRU/LSTM: with `recurrent_replay` their output is replaced by the same computation
  through seqmodels.RNN (which takes torch's state dicts), whose trace holds every layer's h_t, c_t
  and gates, in the autograd graph, so gradients per time step reach them.

Each record names its module by its dotted name in the model. Outside the `with` nothing is attached:
an idle model runs exactly as the user wrote it.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from explorer.analysis.activations.providers.torch_modules import replay_module
from explorer.errors import UserError

RECURRENT = (nn.RNN, nn.GRU, nn.LSTM)
BLOCKS = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
_CAPTURE_LOCK = threading.RLock()  # hooks live on the module: one capture of a model at a time


@dataclass
class CapturedAttention:
    name: str  # dotted module name (the MultiheadAttention, or the module that called SDPA)
    weights: torch.Tensor  # (B, H, Tq, Tk)
    self_attention: bool  # queries and keys from the same sequence


@dataclass
class CapturedRecurrent:
    name: str
    trace: object  # seqmodels.Trace of the replay: hidden / cell / gates by "l0", "l0_reverse"
    steps: int


@dataclass
class Record:
    attention: list[CapturedAttention] = field(default_factory=list)
    recurrent: list[CapturedRecurrent] = field(default_factory=list)
    blocks: list[tuple[str, torch.Tensor]] = field(default_factory=list)  # (name, (B, T, D))
    stack: list[str] = field(default_factory=list)  # dotted names of the modules running now
    attention_modules: set[str] = field(default_factory=set)  # the MultiheadAttention modules
    named: tuple[str, ...] = ()  # modules whose every softmax over the last axis is attention
    # softmax outputs that may be attention: id(it or its dropout/reshape) -> (name, softmax, it)
    candidates: dict[int, tuple[str, torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    taken: set[int] = field(default_factory=set)  # id of each softmax output already recorded
    # hooks live on the shared module: a forward another thread runs meanwhile (an evaluation, a
    # decode) passes through them untouched and unrecorded
    thread: int = field(default_factory=threading.get_ident)

    def mine(self) -> bool:
        return threading.get_ident() == self.thread


@contextlib.contextmanager
def capture(model: nn.Module, recurrent_replay: bool = True, attention: bool = True,
            named: str | list[str] | tuple[str, ...] | None = None):
    """Record attention, recurrent states and block outputs of the forward passes inside."""
    named = (named,) if isinstance(named, str) else tuple(named or ())
    for name in named:
        try:
            model.get_submodule(name)
        except AttributeError:
            raise UserError(f"attention: the model has no module {name!r}") from None
    record = Record(named=named)
    handles = []
    with _CAPTURE_LOCK:
        try:
            for name, module in model.named_modules():
                if not name:
                    continue
                handles.append(module.register_forward_pre_hook(_enter(record, name)))
                handles.append(module.register_forward_hook(_leave(record)))
                if attention and isinstance(module, nn.MultiheadAttention):
                    record.attention_modules.add(name)
                    handles.append(module.register_forward_pre_hook(_ask_weights(record), with_kwargs=True))
                    handles.append(module.register_forward_hook(
                        _keep_weights(record, name), with_kwargs=True))
                elif recurrent_replay and isinstance(module, RECURRENT):
                    handles.append(module.register_forward_hook(
                        _replay(record, name), with_kwargs=True))
                elif isinstance(module, BLOCKS):
                    handles.append(module.register_forward_hook(_keep_block(record, name)))
            with (_SDPAMode(record) if attention else contextlib.nullcontext()):
                yield record
        finally:
            for handle in handles:
                handle.remove()


def _enter(record: Record, name: str):
    def hook(module, args):
        if record.mine():
            record.stack.append(name)
    return hook


def _leave(record: Record):
    def hook(module, args, output):
        if record.mine() and record.stack:
            for item in output if isinstance(output, (tuple, list)) else (output,):
                if isinstance(item, torch.Tensor):
                    _take(record, item)  # a softmax the module returns
            record.stack.pop()
    return hook


def _ask_weights(record: Record):
    def hook(module, args, kwargs):
        return _per_head(module, args, kwargs) if record.mine() else None
    return hook


def _per_head(module, args, kwargs):
    """Per-head weights, remembering what the caller asked for (torch's defaults: averaged)."""
    asked = (kwargs.get("need_weights", args[4] if len(args) > 4 else True),
             kwargs.get("average_attn_weights", args[6] if len(args) > 6 else True))
    module._explorer_asked = asked
    args = args[:4]  # query, key, value, key_padding_mask: the rest go by keyword
    kwargs = {**kwargs, "need_weights": True, "average_attn_weights": False}
    return args, kwargs


def _keep_weights(record: Record, name: str):
    def hook(module, args, kwargs, output):
        if not record.mine():
            return None
        query = args[0] if args else kwargs["query"]
        key = args[1] if len(args) > 1 else kwargs["key"]
        weights = output[1]  # (B, H, Tq, Tk), or (H, Tq, Tk) for an unbatched call
        if weights.dim() == 3:
            weights = weights.unsqueeze(0)
        record.attention.append(CapturedAttention(name, weights, query is key))
        need, average = getattr(module, "_explorer_asked", (True, True))
        return output[0], (weights.mean(dim=1) if average else output[1]) if need else None
    return hook


def _keep_block(record: Record, name: str):
    def hook(module, args, output):
        if not record.mine():
            return
        batch_first = getattr(getattr(module, "self_attn", None), "batch_first", False)
        record.blocks.append((name, output if batch_first else output.transpose(0, 1)))
    return hook


def _replay(record: Record, name: str):
    """The module's output recomputed through seqmodels.RNN with trace=True (same weights)."""
    def hook(module, args, kwargs, output):
        if not record.mine():
            return None
        if getattr(module, "proj_size", 0) or getattr(module, "nonlinearity", "tanh") != "tanh":
            return None  # a projection or a ReLU cell: seqmodels.RNN has neither, keep torch's
        if isinstance(args[0], nn.utils.rnn.PackedSequence):
            return None
        replica = replay_module(module)
        hx = args[1] if len(args) > 1 else kwargs.get("hx")
        result, h_n, trace = replica(args[0], hx, trace=True)
        steps = args[0].shape[1 if module.batch_first and args[0].dim() == 3 else 0]
        record.recurrent.append(CapturedRecurrent(name, trace, steps))
        return result, h_n
    return hook


SOFTMAX = (F.softmax, torch.softmax, torch.Tensor.softmax)
PRODUCTS = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm,
            torch.Tensor.bmm, torch.einsum)
# what weights pass through on their way to the values: dropout, and reshapes
PASSING = (F.dropout, torch.dropout, torch.Tensor.unsqueeze, torch.unsqueeze, torch.Tensor.view,
           torch.Tensor.reshape, torch.Tensor.squeeze, torch.Tensor.contiguous, torch.Tensor.to)
CROSS_NAMES = ("cross", "src_attn", "enc_attn", "encdec", "enc_dec", "memory")


class _SDPAMode(TorchFunctionMode):
    """Beside each F.scaled_dot_product_attention call, its weights, recomputed; softmaxes inside
    the user's modules followed to where they weigh values."""

    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        record = self.record
        if not record.mine():
            return func(*args, **kwargs)
        inside_mha = bool(record.stack) and record.stack[-1] in record.attention_modules
        if func is F.scaled_dot_product_attention:
            # a MultiheadAttention's own call: its hook keeps the weights it was asked for
            if not inside_mha:
                record.attention.append(CapturedAttention(
                    record.stack[-1] if record.stack else "",
                    sdpa_weights(*args, **kwargs), _same_length(*args)))
            return func(*args, **kwargs)
        output = func(*args, **kwargs)
        if func in SOFTMAX and record.stack and not inside_mha and _last_axis(args, kwargs):
            name = record.stack[-1]
            record.candidates[id(output)] = (name, output, output)
            if any(name == n or name.startswith(n + ".") for n in record.named):
                _take(record, output)
        elif record.candidates and func in PRODUCTS:
            for item in args:
                if isinstance(item, torch.Tensor):
                    _take(record, item)
        elif record.candidates and func in PASSING and args and id(args[0]) in record.candidates:
            # the tensor is kept with its entry, so its id is not reused meanwhile
            record.candidates[id(output)] = (*record.candidates[id(args[0])][:2], output)
        return output


def _last_axis(args, kwargs) -> bool:
    tensor = args[0]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    return (isinstance(tensor, torch.Tensor) and isinstance(dim, int) and 2 <= tensor.dim() <= 4
            and dim in (-1, tensor.dim() - 1))


def _take(record: Record, tensor: torch.Tensor) -> None:
    """Record the softmax behind `tensor` as attention (once), (B, H, Tq, Tk)."""
    found = record.candidates.get(id(tensor))
    if found is None:
        return
    name, weights, _ = found
    if id(weights) in record.taken:
        return
    record.taken.add(id(weights))
    one_query = weights.dim() == 2
    shaped = {2: lambda w: w[:, None, None, :], 3: lambda w: w[:, None]}.get(
        weights.dim(), lambda w: w)(weights)  # (B, H, Tq, Tk)
    cross = one_query or any(word in name.lower() for word in CROSS_NAMES)
    record.attention.append(CapturedAttention(
        name, shaped, not cross and shaped.shape[-1] == shaped.shape[-2]))


def _same_length(query, key, *rest, **kwargs) -> bool:
    return query.shape[-2] == key.shape[-2]


def sdpa_weights(query, key, value=None, attn_mask=None, dropout_p=0.0, is_causal=False,
                 scale=None, enable_gqa=False) -> torch.Tensor:
    """softmax(QKᵀ·scale + mask) as F.scaled_dot_product_attention computes it (no dropout),
    (B, H, Tq, Tk); a 3-d call gets H = 1."""
    if query.dim() == 3:
        query, key = query.unsqueeze(1), key.unsqueeze(1)
        if attn_mask is not None and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(1)
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, dim=-3)
    scale = scale if scale is not None else query.shape[-1] ** -0.5
    scores = query @ key.transpose(-2, -1) * scale  # (B, H, Tq, Tk)
    if is_causal:
        causal = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        scores = (scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
                  else scores + attn_mask)
    return torch.softmax(scores, dim=-1)
