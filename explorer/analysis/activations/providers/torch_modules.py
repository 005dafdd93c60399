"""Plain torch modules (a user's own model behind explorer.usermodel's adapter) onto the activation
names, with nothing in the user's code changed.

* `torch.nn.TransformerEncoderLayer` / `TransformerDecoderLayer`: the blocks of the `encoder` /
  `decoder` stack (an LM's are its `decoder`'s), numbered in registration order: `hook_resid_pre`,
  `hook_resid_post`, `hook_mlp_out` (linear2's output), and their attention modules as below with
  `attn` / `cross_attn`;
* every other `torch.nn.MultiheadAttention`, and every module that calls
  `F.scaled_dot_product_attention` itself (caught by a TorchFunctionMode while attached), is block
  k's `attn` (self-attention) or `cross_attn` (keys from another sequence) in the order they run.
  While attached the attention is computed here from the module's own weights, so `hook_pattern`
  (B, H, Tq, Tk) and `hook_z` (B, T, H, Dh) can be read and replaced, and `hook_attn_out` /
  `hook_cross_attn_out` follow the output projection;
* `torch.nn.RNN` / `GRU` / `LSTM` (tanh, no projection): replayed through seqmodels.RNN on the very
  same parameters, whose idle hook site gives `{stack}.rnn.l{k}.{fwd,bwd}.hook_h`, `hook_c` and
  `hook_gate_{g}` per step; `{stack}.hook_out` is the stack's last recurrent output;
* `{stack}.hook_embed`: what the stack's first block or recurrent module receives.

The stack of a module: an LM has one (`lm` when recurrent, else `decoder`); in an encoder-decoder a
name with "dec" / "enc" says, else the first recurrent module or block is the encoder's.
`dotted_names(model)` maps each point prefix to the user's dotted module name it came from.
"""

from __future__ import annotations

import math
import threading

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from explorer.analysis.activations.core import BaseProvider, removing, set_attribute
from explorer.families import family_of

RECURRENT = (nn.RNN, nn.GRU, nn.LSTM)
BLOCKS = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
# point prefix -> dotted module name, per model, as the last attached pass found them
_DOTTED: dict[int, dict[str, str]] = {}


def dotted_names(model) -> dict[str, str]:
    """"decoder.blocks.0.attn" -> "blocks.0.self_attn" ...: the user's own module names."""
    return dict(_DOTTED.get(id(model), {}))


class TorchModulesProvider(BaseProvider):
    name = "torch-modules"

    def accepts(self, model) -> bool:
        """explorer.usermodel's adapters: the provider of that package's models (its module name
        is read, so nothing is imported)."""
        return type(model).__module__.startswith("explorer.usermodel.") and hasattr(model, "inner")

    def attach(self, model, visit):
        pass_ = _Pass(model, visit)
        handles: list = []
        for name, module in model.inner.named_modules():
            if isinstance(module, BLOCKS):
                pass_.attach_block(name, module, handles)
            elif isinstance(module, nn.MultiheadAttention) and name not in pass_.in_blocks:
                handles.append(set_attribute(module, "forward", pass_.attention_forward(name, module)))
            elif isinstance(module, RECURRENT) and _replayable(module):
                handles.append(set_attribute(module, "forward", pass_.recurrent_forward(name, module)))
            if name:
                handles.append(module.register_forward_pre_hook(pass_.enter(name)))
                handles.append(module.register_forward_hook(pass_.leave))
        mode = _SDPAMode(pass_)
        mode.__enter__()
        handles.append(lambda: mode.__exit__(None, None, None))
        _DOTTED[id(model)] = pass_.dotted
        return removing(handles)

    def embeddings(self, model) -> dict:
        has_source = family_of(model).has_source
        found = {"input": model.tgt_embedding if has_source else model.embedding,
                 "output": model.head}
        if has_source:
            found["source"] = model.src_embedding
        return {kind: module.weight for kind, module in found.items() if module is not None}


def _replayable(module) -> bool:
    return not getattr(module, "proj_size", 0) and getattr(module, "nonlinearity", "tanh") == "tanh"


class _Pass:
    """The bookkeeping of one attached pass: stacks, block numbers, the running module."""

    def __init__(self, model, visit) -> None:
        self.visit = visit
        family = family_of(model)
        self.seq2seq, self.recurrent = family.has_source, family.recurrent
        self.owner = threading.get_ident()
        self.in_blocks = {f"{name}.{child}" if name else child
                          for name, block in model.inner.named_modules() if isinstance(block, BLOCKS)
                          for child, _ in block.named_children()}
        self.blocks: dict[str, int] = {}  # stack -> blocks numbered so far
        self.block_of: dict[str, str] = {}  # dotted name -> its point prefix
        self.layers: dict[str, int] = {}  # stack -> recurrent layers numbered so far
        self.first_seen: set[str] = set()  # stacks whose hook_embed was visited
        self.stack: list[str] = []  # dotted names of the modules running now
        self.steps: dict[str, int] = {}  # recurrent module -> positions it has run this pass
        self.dotted: dict[str, str] = {}

    def mine(self) -> bool:
        return threading.get_ident() == self.owner

    def enter(self, name):
        def hook(module, args):
            if self.mine():
                self.stack.append(name)
        return hook

    def leave(self, module, args, output):
        if self.mine() and self.stack:
            self.stack.pop()

    # -- where a module belongs ---------------------------------------------------------------------

    def stack_of(self, name: str, encoder_block: bool | None = None) -> str:
        if not self.seq2seq:
            return "lm" if self.recurrent else "decoder"
        if encoder_block is not None:
            return "encoder" if encoder_block else "decoder"
        lowered = name.lower()
        if "dec" in lowered:
            return "decoder"
        if "enc" in lowered:
            return "encoder"
        return "encoder" if not self.first_seen else "decoder"

    def embed(self, stack: str, x):
        """The first input a stack's first module receives."""
        if stack in self.first_seen:
            return x
        self.first_seen.add(stack)
        return self.visit(f"{stack}.hook_embed", x)

    def prefix(self, name: str, stack: str) -> str:
        """`{stack}.blocks.{k}` of a block or a standalone attention module (numbered on first run)."""
        if name not in self.block_of:
            k = self.blocks.get(stack, 0)
            self.blocks[stack] = k + 1
            self.block_of[name] = f"{stack}.blocks.{k}"
        return self.block_of[name]

    # -- Transformer blocks ---------------------------------------------------------------------------

    def attach_block(self, name: str, block, handles: list) -> None:
        stack = self.stack_of(name, isinstance(block, nn.TransformerEncoderLayer)
                              if self.seq2seq else None)
        batch_first = block.self_attn.batch_first

        def pre(module, args, kwargs):
            if not self.mine():
                return None
            x = args[0] if args else kwargs["src" if "src" in kwargs else "tgt"]
            x = x if batch_first else x.transpose(0, 1)  # (B, T, D)
            p = self.prefix(name, stack)
            x = self.visit(f"{p}.hook_resid_pre", self.embed(stack, x))
            x = x if batch_first else x.transpose(0, 1)
            return ((x, *args[1:]), kwargs) if args else (args, {**kwargs, "src" if "src" in kwargs else "tgt": x})

        def post(module, args, output):
            if not self.mine():
                return None
            p = self.block_of[name]
            x = output if batch_first else output.transpose(0, 1)
            x = self.visit(f"{p}.hook_resid_post", x)
            return x if batch_first else x.transpose(0, 1)

        def mlp(module, args, output):
            if not self.mine():
                return None
            out = output if batch_first else output.transpose(0, 1)
            out = self.visit(f"{self.block_of[name]}.hook_mlp_out", out)
            return out if batch_first else out.transpose(0, 1)

        handles.append(block.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(block.register_forward_hook(post))
        handles.append(block.linear2.register_forward_hook(mlp))
        sub = [("attn", "self_attn", block.self_attn)]
        if isinstance(block, nn.TransformerDecoderLayer):
            sub.append(("cross_attn", "multihead_attn", block.multihead_attn))
        for label, child, attention in sub:
            dotted = f"{name}.{child}" if name else child
            handles.append(set_attribute(attention, "forward", self.attention_forward(
                dotted, attention, block=(name, label))))

    # -- attention ------------------------------------------------------------------------------------

    def attention_forward(self, name: str, module: nn.MultiheadAttention, block=None):
        """nn.MultiheadAttention.forward, computed here with named patterns and head outputs."""
        original = type(module).forward.__get__(module)

        def forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                    average_attn_weights=True, is_causal=False):
            if (not self.mine() or module.bias_k is not None or module.add_zero_attn
                    or query.dim() != 3):
                return original(query, key, value, key_padding_mask=key_padding_mask,
                                need_weights=need_weights, attn_mask=attn_mask,
                                average_attn_weights=average_attn_weights, is_causal=is_causal)
            if block is not None:
                block_name, label = block
                p = f"{self.block_of[block_name]}.{label}"
            else:
                label = "attn" if query is key else "cross_attn"
                stack = self.stack_of(name) if label == "attn" else "decoder"
                p = f"{self.prefix(name, stack)}.{label}"
            self.dotted[p] = name
            if not module.batch_first:
                query, key, value = (t.transpose(0, 1) for t in (query, key, value))  # (B, T, D)
            q, k, v = _projections(module, query, key, value)  # (B, H, T, Dh)
            mask = _additive_mask(attn_mask, key_padding_mask, is_causal, q, k, module.num_heads)
            pattern = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + mask, dim=-1)
            pattern = self.visit(f"{p}.hook_pattern", pattern)  # (B, H, Tq, Tk)
            used = F.dropout(pattern, module.dropout, module.training)
            z = self.visit(f"{p}.hook_z", (used @ v).transpose(1, 2))  # (B, T, H, Dh)
            out = module.out_proj(z.reshape(z.shape[0], z.shape[1], -1))  # (B, T, D)
            outer = p.rsplit(".", 1)[0]
            out = self.visit(f"{outer}.hook_{label}_out", out)
            out = out if module.batch_first else out.transpose(0, 1)
            weights = (pattern.mean(dim=1) if average_attn_weights else pattern) if need_weights else None
            return out, weights

        return forward

    def sdpa(self, func, query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
             scale=None, enable_gqa=False):
        """A module's own F.scaled_dot_product_attention call, computed here with named points."""
        name = self.stack[-1] if self.stack else ""
        if query.dim() != 4 or enable_gqa:
            return func(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                        is_causal=is_causal, scale=scale)
        label = "attn" if query.shape[-2] == key.shape[-2] and "cross" not in name else "cross_attn"
        stack = self.stack_of(name) if label == "attn" else "decoder"
        p = f"{self.prefix(name, stack)}.{label}"
        self.dotted[p] = name
        scale = scale if scale is not None else query.shape[-1] ** -0.5
        mask = _additive_mask(attn_mask, None, is_causal, query, key, query.shape[1], sdpa=True)
        pattern = self.visit(f"{p}.hook_pattern", torch.softmax(
            query @ key.transpose(-2, -1) * scale + mask, dim=-1))  # (B, H, Tq, Tk)
        used = F.dropout(pattern, dropout_p) if dropout_p else pattern
        z = self.visit(f"{p}.hook_z", (used @ value).transpose(1, 2))  # (B, T, H, Dh)
        return z.transpose(1, 2)  # (B, H, T, Dh), as the call returns it

    # -- recurrent modules ----------------------------------------------------------------------------

    def recurrent_forward(self, name: str, module: nn.RNNBase):
        """The module's forward replayed through seqmodels.RNN's hook site (same parameters)."""
        original = type(module).forward.__get__(module)

        def forward(input, hx=None):
            if not self.mine() or isinstance(input, nn.utils.rnn.PackedSequence) or input.dim() != 3:
                return original(input, hx)
            stack = self.stack_of(name)
            batch_first = module.batch_first
            x = input if batch_first else input.transpose(0, 1)  # (B, T, I)
            x = self.embed(stack, x)
            if name not in self.steps:
                self.steps[name] = 0
                self.layers.setdefault(f"{stack}:{name}", self.layers.get(stack, 0))
                self.layers[stack] = self.layers.get(stack, 0) + module.num_layers
            first, done = self.layers[f"{stack}:{name}"], self.steps[name]
            self.dotted[f"{stack}.rnn.l{first}"] = name

            def site(layer: str, quantity: str, t: int, value):
                k, _, reverse = layer[1:].partition("_")
                direction = "bwd" if reverse else "fwd"
                return self.visit(f"{stack}.rnn.l{first + int(k)}.{direction}.hook_{quantity}",
                                  value, step=done + t)

            replica = replay_module(module)
            replica.batch_first = True
            replica.activation_hook = site
            output, h_n = replica(x, hx)
            self.steps[name] = done + x.shape[1]
            if x.shape[1] == 1 and done:  # a decoder run one step per call: its steps count on
                output = self.visit(f"{stack}.hook_out", output[:, 0], step=done).unsqueeze(1)
            elif x.shape[1] == 1:
                output = self.visit(f"{stack}.hook_out", output[:, 0], step=0).unsqueeze(1)
            else:
                output = self.visit(f"{stack}.hook_out", output)
            return (output if batch_first else output.transpose(0, 1)), h_n

        return forward


def _projections(module: nn.MultiheadAttention, query, key, value):
    """Queries, keys and values per head (B, H, T, Dh) from the module's own weights."""
    dim, heads = module.embed_dim, module.num_heads
    if module._qkv_same_embed_dim:
        w_q, w_k, w_v = module.in_proj_weight.split(dim)
    else:
        w_q, w_k, w_v = module.q_proj_weight, module.k_proj_weight, module.v_proj_weight
    b_q = b_k = b_v = None
    if module.in_proj_bias is not None:
        b_q, b_k, b_v = module.in_proj_bias.split(dim)

    def heads_of(x, w, b):
        projected = F.linear(x, w, b)  # (B, T, D)
        return projected.view(x.shape[0], x.shape[1], heads, dim // heads).transpose(1, 2)

    return heads_of(query, w_q, b_q), heads_of(key, w_k, b_k), heads_of(value, w_v, b_v)


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



def _additive_mask(attn_mask, key_padding_mask, is_causal, q, k, heads, sdpa=False):
    """One additive mask (0 / -inf), broadcastable to (B, H, Tq, Tk). nn.MultiheadAttention's bool
    masks mark what is NOT attended (True = masked); F.scaled_dot_product_attention's what is."""
    tq, tk = q.shape[-2], k.shape[-2]
    mask = torch.zeros(tq, tk, dtype=q.dtype, device=q.device)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            blocked = ~attn_mask if sdpa else attn_mask
            extra = torch.zeros(blocked.shape, dtype=q.dtype, device=q.device).masked_fill(
                blocked, float("-inf"))
        else:
            extra = attn_mask.to(q.dtype)
        if extra.dim() == 3 and not sdpa:  # (B * H, Tq, Tk)
            extra = extra.view(-1, heads, tq, tk)
        mask = mask + extra
    elif is_causal:
        mask = mask.masked_fill(torch.ones(tq, tk, dtype=torch.bool, device=q.device).triu(1),
                                float("-inf"))
    if key_padding_mask is not None:
        padding = key_padding_mask.to(torch.bool) if key_padding_mask.dtype == torch.bool else None
        extra = (torch.zeros(key_padding_mask.shape, dtype=q.dtype, device=q.device).masked_fill(
            padding, float("-inf")) if padding is not None else key_padding_mask.to(q.dtype))
        mask = mask + extra[:, None, None, :]  # (B, 1, 1, Tk)
    return mask


class _SDPAMode(TorchFunctionMode):
    def __init__(self, pass_: _Pass) -> None:
        super().__init__()
        self.pass_ = pass_

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and self.pass_.mine():
            return self.pass_.sdpa(func, *args, **kwargs)
        return func(*args, **kwargs)


PROVIDER = TorchModulesProvider()
