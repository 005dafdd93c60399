"""Hugging Face models (GPT-2, BERT, DistilBERT, Marian, T5, ...), behind explorer.hf.adapter or
bare transformers models, onto the activation names.

Blocks are found as the model's list of layers (`h`, `layer`, `layers`, `block`) under each stack
(`get_encoder()` / `get_decoder()` of an encoder-decoder, `base_model` of an LM). Attention goes
through transformers' attention interface: while attached, the model's implementation is
"explorer_hooks", which calls the model's own `eager_attention_forward` and passes its weights
("hook_pattern") and per-head output ("hook_z", (B, T, H, Dh)) through the hooks; a replaced
pattern is multiplied into the values again, as eager attention does. Which sub-layer outputs are
the attention and feed-forward outputs differs per architecture: `SUB_LAYERS`.
"""

from __future__ import annotations

import sys
import threading

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AttentionInterface, PreTrainedModel
from transformers.masking_utils import AttentionMaskInterface, eager_mask

from explorer.analysis.activations.core import BaseProvider, output_hook, removing
from explorer.families import family_of, module_at
from explorer.hf.adapter import _SWITCH_LOCK, HFAdapter

IMPLEMENTATION = "explorer_hooks"
# where causal LMs keep the norm between the last block and the unembedding
FINAL_NORMS = ("transformer.ln_f", "model.norm", "gpt_neox.final_layer_norm",
               "model.decoder.final_layer_norm")
BLOCK_LISTS = ("h", "layer", "layers", "block")
# model_type -> point -> module path inside a block whose output (or its first element) it is
SUB_LAYERS = {
    "gpt2": {"attn_out": "attn", "cross_attn_out": "crossattention", "mlp_out": "mlp"},
    "bert": {"attn_out": "attention.output.dense", "mlp_out": "output.dense"},
    "distilbert": {"attn_out": "attention", "mlp_out": "ffn"},
    "marian": {"attn_out": "self_attn", "cross_attn_out": "encoder_attn", "mlp_out": "fc2"},
    "t5": {"attn_out": "layer.0.SelfAttention", "cross_attn_out": "layer.1.EncDecAttention",
           "mlp_out": "layer.-1.DenseReluDense"},
}
CROSS_ATTENTION = ("encdec", "encoder_attn", "crossattention", "cross_attn")  # in a module's path

# attention module -> (point prefix, visit) of the pass attached now (one at a time: core's lock)
_ATTENTION_SITES: dict[nn.Module, tuple[str, object]] = {}
_SITES_LOCK = threading.Lock()


def _hooked_attention(module, query, key, value, attention_mask, dropout=0.0, **kwargs):
    """The model's own eager attention, with the pattern and each head's output as points."""
    eager = sys.modules[type(module).__module__].eager_attention_forward
    out, weights = eager(module, query, key, value, attention_mask, dropout=dropout, **kwargs)
    site = _ATTENTION_SITES.get(module)
    if site is None:
        return out, weights
    prefix, visit = site
    new = visit(f"{prefix}.hook_pattern", weights)
    if new is not weights:  # what eager attention does with its weights, on the replaced ones
        kept = F.dropout(new, p=dropout, training=module.training)
        out = torch.matmul(kept.to(value.dtype), value).transpose(1, 2).contiguous()  # (B, T, H, Dh)
        weights = new
    return visit(f"{prefix}.hook_z", out), weights


AttentionInterface.register(IMPLEMENTATION, _hooked_attention)
AttentionMaskInterface.register(IMPLEMENTATION, eager_mask)  # the masks eager attention is given


def _at(module: nn.Module, path: str):
    for part in path.split("."):
        module = module[int(part)] if part.lstrip("-").isdigit() else getattr(module, part, None)
        if module is None:
            return None
    return module


def _blocks(stack_module: nn.Module) -> nn.ModuleList:
    """The stack's list of blocks: the shallowest ModuleList called h, layer, layers or block."""
    found = [(name.count("."), module) for name, module in stack_module.named_modules()
             if isinstance(module, nn.ModuleList) and name.rsplit(".", 1)[-1] in BLOCK_LISTS]
    if not found:
        raise ValueError(f"no list of blocks found in a {type(stack_module).__name__}")
    return min(found, key=lambda item: item[0])[1]


def _hf(model) -> PreTrainedModel:
    return model.hf if isinstance(model, HFAdapter) else model


def _is_masked_lm(hf: PreTrainedModel) -> bool:
    return "MaskedLM" in type(hf).__name__


def stacks(model) -> dict[str, nn.Module]:
    """stack name -> the module that runs it (its output holds last_hidden_state)."""
    hf = _hf(model)
    if hf.config.is_encoder_decoder:
        return {"encoder": hf.get_encoder(), "decoder": hf.get_decoder()}
    return {("encoder" if _is_masked_lm(hf) else "decoder"): hf.base_model}


def final_norm(hf: PreTrainedModel):
    """The module between a causal LM's last block and its unembedding, or None when unknown."""
    for path in FINAL_NORMS:
        module = _at(hf, path)
        if module is not None:
            return module
    return None


def _first_input_hook(module, fn):
    """A pre-hook passing the block's hidden states (first positional or `hidden_states=`) through fn."""

    def hook(_module, args, kwargs):
        if args:
            return (fn(args[0]), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": fn(kwargs["hidden_states"])}

    return module.register_forward_pre_hook(hook, with_kwargs=True)


def _last_hidden_hook(module, fn):
    """A forward hook passing a stack's ModelOutput.last_hidden_state through fn."""

    def hook(_module, _args, output):
        output.last_hidden_state = fn(output.last_hidden_state)
        return output

    return module.register_forward_hook(hook)


class HFProvider(BaseProvider):
    name = "huggingface"

    def accepts(self, model) -> bool:
        return isinstance(model, (HFAdapter, PreTrainedModel))

    def forward(self, model, inputs: tuple):
        if isinstance(model, HFAdapter):
            return super().forward(model, inputs)
        if len(inputs) > 1:  # a bare encoder-decoder: source, decoder input
            return model(input_ids=inputs[0], decoder_input_ids=inputs[1]).logits
        return model(input_ids=inputs[0]).logits

    def attach(self, model, visit):
        handles: list = []
        sub_layers = SUB_LAYERS.get(_hf(model).config.model_type, {})
        sites = {}
        for stack, stack_module in stacks(model).items():
            blocks = _blocks(stack_module)
            for k, block in enumerate(blocks):
                p = f"{stack}.blocks.{k}"
                first = k == 0

                def pre(x, p=p, first=first, stack=stack):
                    if first:  # the embedding output is what the first block reads
                        x = visit(f"{stack}.hook_embed", x)
                    return visit(f"{p}.hook_resid_pre", x)

                handles.append(_first_input_hook(block, pre))
                for path, sub in block.named_modules():
                    label = "cross_attn" if any(c in path.lower() for c in CROSS_ATTENTION) else "attn"
                    sites[sub] = (f"{p}.{label}", visit)
                for point, path in sub_layers.items():
                    sub = _at(block, path)
                    if sub is not None:
                        handles.append(output_hook(sub, lambda x, p=p, point=point: visit(f"{p}.hook_{point}", x)))
                handles.append(output_hook(block, lambda x, p=p: visit(f"{p}.hook_resid_post", x)))
            handles.append(_last_hidden_hook(stack_module, lambda x, stack=stack: visit(f"{stack}.hook_out", x)))
        handles.extend(self._switch(model, sites))
        return removing(handles)

    @staticmethod
    def _switch(model, sites: dict) -> list:
        """Attention through `_hooked_attention` until undone (the undo callables)."""
        hf = _hf(model)
        if not hf._can_set_attn_implementation():
            return []  # no switchable attention: no pattern or z points
        _SWITCH_LOCK.acquire()  # a decoding thread must not switch it back meanwhile
        before = hf.config._attn_implementation
        try:
            hf.set_attn_implementation(IMPLEMENTATION)
        except BaseException:
            _SWITCH_LOCK.release()
            raise
        with _SITES_LOCK:
            _ATTENTION_SITES.update(sites)

        def undo():
            try:
                with _SITES_LOCK:
                    for module in sites:
                        _ATTENTION_SITES.pop(module, None)
                hf.set_attn_implementation(before)
            finally:
                _SWITCH_LOCK.release()

        return [undo]

    def embeddings(self, model) -> dict:
        if isinstance(model, HFAdapter):
            paths = family_of(model).embeddings  # built here from scratch (hf-marian): their paths
            if paths is not None:
                return {kind: module_at(model, path).weight for kind, path in paths.items()}
        hf = _hf(model)
        found = {"input": hf.get_input_embeddings(), "output": hf.get_output_embeddings()}
        return {kind: module.weight for kind, module in found.items() if module is not None}

    def readout(self, model):
        hf = _hf(model)
        norm, head = final_norm(hf), hf.get_output_embeddings()
        if hf.config.is_encoder_decoder or _is_masked_lm(hf) or norm is None or head is None:
            return None  # their heads are not a final norm and an unembedding
        if isinstance(model, HFAdapter):
            return lambda x: model._allowed(head(norm(x)))  # what the adapter's forward returns
        return lambda x: head(norm(x))


PROVIDER = HFProvider()
