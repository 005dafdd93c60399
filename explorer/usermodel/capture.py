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


@contextlib.contextmanager
def capture(model: nn.Module, recurrent_replay: bool = True, attention: bool = True):
    """Record attention, recurrent states and block outputs of the forward passes inside."""
    record = Record()
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
                    handles.append(module.register_forward_pre_hook(_ask_weights, with_kwargs=True))
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
        record.stack.append(name)
    return hook


def _leave(record: Record):
    def hook(module, args, output):
        if record.stack:
            record.stack.pop()
    return hook


def _ask_weights(module, args, kwargs):
    """Per-head weights, remembering what the caller asked for (torch's defaults: averaged)."""
    asked = (kwargs.get("need_weights", args[4] if len(args) > 4 else True),
             kwargs.get("average_attn_weights", args[6] if len(args) > 6 else True))
    module._explorer_asked = asked
    args = args[:4]  # query, key, value, key_padding_mask: the rest go by keyword
    kwargs = {**kwargs, "need_weights": True, "average_attn_weights": False}
    return args, kwargs


def _keep_weights(record: Record, name: str):
    def hook(module, args, kwargs, output):
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
        batch_first = getattr(getattr(module, "self_attn", None), "batch_first", False)
        record.blocks.append((name, output if batch_first else output.transpose(0, 1)))
    return hook


def _replay(record: Record, name: str):
    """The module's output recomputed through seqmodels.RNN with trace=True (same weights)."""
    def hook(module, args, kwargs, output):
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


def replay_module(module: nn.RNNBase):
    """A seqmodels.RNN with the module's configuration, sharing its parameters (no copy: the
    gradients reach the user's own weights)."""
    from seqmodels.recurrent import RNN

    cell = {"LSTM": "lstm", "GRU": "gru"}.get(module.mode, "rnn")
    replica = RNN(cell, module.input_size, module.hidden_size, module.num_layers,
                  module.bidirectional, module.batch_first, module.dropout)
    replica.train(module.training)
    for key, parameter in module.named_parameters(recurse=False):
        setattr(replica, key, parameter)  # the very Parameter objects
    return replica


class _SDPAMode(TorchFunctionMode):
    """Beside each F.scaled_dot_product_attention call, its weights, recomputed."""

    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            # a MultiheadAttention's own call: its hook keeps the weights it was asked for
            if not (self.record.stack and self.record.stack[-1] in self.record.attention_modules):
                self.record.attention.append(CapturedAttention(
                    self.record.stack[-1] if self.record.stack else "",
                    sdpa_weights(*args, **kwargs), _same_length(*args)))
        return func(*args, **kwargs)


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
