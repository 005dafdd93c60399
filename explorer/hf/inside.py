"""Inside a Hugging Face model: its residual stream after every layer and its logit-lens readout,
for the hidden panel (explorer.analysis.hidden), which names no module of these models itself.

The residual stream comes from transformers' own `output_hidden_states`: the embedding output, then
every block's output. A causal LM's last entry has the final norm applied already (GPT-2's `ln_f`);
where that norm is known (FINAL_NORMS) the stream's last entry is instead what goes into it, caught
by a hook, so every entry is a residual stream, and the logit lens reads each one the way the model
reads its last: `lm_head(final_norm(x))`. The last layer's lens is then the model's own next-token
distribution. Encoder-decoders and masked LMs show their hidden states as transformers reports them
(no logit lens: their heads are not a norm and an unembedding).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from explorer.families import family_of, module_at

# where causal LMs keep the norm between the last block and the unembedding
FINAL_NORMS = ("transformer.ln_f", "model.norm", "gpt_neox.final_layer_norm",
               "model.decoder.final_layer_norm")


@dataclass
class ResidualStreams:
    streams: dict[str, list[Tensor]]  # stack -> [(1, T, D)]: the embedding, then after each block
    readout: Callable[[Tensor], Tensor] | None  # decoder stream (1, T, D) -> logits (1, T, V)


def final_norm(hf_model):
    """The module between a causal LM's last block and its unembedding, or None when unknown."""
    for path in FINAL_NORMS:
        try:
            return module_at(hf_model, path)
        except AttributeError:
            continue
    return None


def residual_streams(model, inputs: tuple) -> ResidualStreams:
    """The residual streams of the adapter `model` (explorer.hf.adapter) on the probe's `inputs`
    (a batch of one, as its family's encode_probe makes them)."""
    hf, family = model.hf, family_of(model)
    with torch.no_grad():
        if family.has_source:
            out = hf(input_ids=inputs[0], decoder_input_ids=inputs[1], use_cache=False,
                     output_hidden_states=True)
            streams = {"encoder": list(out.encoder_hidden_states), "decoder": list(out.decoder_hidden_states)}
            return ResidualStreams(streams, None)
        if family.masked_lm:
            out = hf(input_ids=inputs[0], output_hidden_states=True)
            return ResidualStreams({"encoder": list(out.hidden_states)}, None)
        norm, head = final_norm(hf), hf.get_output_embeddings()
        caught: list[Tensor] = []
        me = threading.get_ident()  # a decoding worker may run the same model meanwhile

        def catch(_module, args) -> None:
            if threading.get_ident() == me:
                caught.append(args[0])

        hook = norm.register_forward_pre_hook(catch) if norm is not None else None
        try:
            out = hf(input_ids=inputs[0], use_cache=False, output_hidden_states=True)
        finally:
            if hook is not None:
                hook.remove()
        hidden = list(out.hidden_states)
        if norm is None or len(caught) != 1:
            return ResidualStreams({"decoder": hidden}, None)
        hidden[-1] = caught[0]  # the last block's output, before the final norm

        def readout(x: Tensor) -> Tensor:
            return model._allowed(head(norm(x)))  # what the adapter's forward returns

        return ResidualStreams({"decoder": hidden}, readout)
