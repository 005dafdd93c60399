"""The seqmodels families (rnn-lm, seq2seq, transformer, gpt, bert) onto the activation names.

Module outputs are caught with torch forward hooks; what no module returns (attention weights and
every head's output, per-step states and gates) comes from the models' own idle hook sites,
`activation_hook` on seqmodels' MultiHeadAttention, Alignment and RNN, set only while attached.
Where each stack's modules sit is the family entry's `stacks` (embedding) and `layers` (blocks or
RNN, final norm): a family built from these pieces needs no change here (explorer/families.py).
"""

from __future__ import annotations

from explorer.analysis.activations.core import (
    BaseProvider, input_hook, output_hook, removing, set_attribute,
)
from explorer.errors import UserError
from explorer.families import family_of, get_family, module_at
from seqmodels.recurrent import RNN


def _stacks(model) -> dict:
    """stack name -> (embedding module, its layers: blocks or the RNN, final norm or None)."""
    family = family_of(model)
    return {stack: (module_at(model, family.stacks[stack][0]), module_at(model, layers),
                    module_at(model, norm) if norm else None)
            for stack, (layers, norm) in family.layers.items()}


class SeqModelsProvider(BaseProvider):
    name = "seqmodels"

    def accepts(self, model) -> bool:
        """The models whose family entry says where their layers are (read, not imported)."""
        family = getattr(getattr(model, "config", None), "family", None)
        try:
            return isinstance(family, str) and bool(get_family(family).layers)
        except UserError:  # a model of no registered family
            return False

    def attach(self, model, visit):
        handles: list = []
        alignment = getattr(model, "alignment", None)  # an RNN encoder-decoder with attention
        for stack, (embed, layers, norm) in _stacks(model).items():
            if family_of(model).recurrent:
                # a Bahdanau decoder's RNN runs one position per call (seqmodels/seq2seq.py)
                stepwise = stack == "decoder" and getattr(model, "style", None) == "bahdanau"
                self._attach_recurrent(stack, embed, layers, stepwise, visit, handles)
            else:
                self._attach_transformer(stack, embed, layers, norm, visit, handles)
        if alignment is not None:
            self._attach_alignment(model, visit, handles)
        return removing(handles)

    @staticmethod
    def _attach_transformer(stack, embed, blocks, norm, visit, handles):
        handles.append(output_hook(embed, lambda x: visit(f"{stack}.hook_embed", x)))
        for k, block in enumerate(blocks):
            p = f"{stack}.blocks.{k}"
            handles.append(input_hook(block, lambda x, p=p: visit(f"{p}.hook_resid_pre", x)))
            attentions = [("attn", block.self_attn)]
            if hasattr(block, "multihead_attn"):
                attentions.append(("cross_attn", block.multihead_attn))
            for label, attention in attentions:
                site = lambda kind, value, p=p, label=label: visit(f"{p}.{label}.hook_{kind}", value)
                handles.append(set_attribute(attention, "activation_hook", site))
                handles.append(output_hook(attention, lambda x, p=p, label=label: visit(f"{p}.hook_{label}_out", x)))
            handles.append(output_hook(block.linear2, lambda x, p=p: visit(f"{p}.hook_mlp_out", x)))
            handles.append(output_hook(block, lambda x, p=p: visit(f"{p}.hook_resid_post", x)))
        handles.append(output_hook(norm, lambda x: visit(f"{stack}.hook_out", x)))

    @staticmethod
    def _attach_recurrent(stack, embedding, rnn: RNN, stepwise: bool, visit, handles):
        """`stepwise`: the RNN is called once per position (a Bahdanau decoder); positions count on."""
        done = [0]  # positions this RNN has run in this pass

        def site(layer: str, quantity: str, t: int, value):
            k, _, reverse = layer[1:].partition("_")
            direction = "bwd" if reverse else "fwd"
            return visit(f"{stack}.rnn.l{k}.{direction}.hook_{quantity}", value, step=done[0] + t)

        def out(x):  # (B, T, D * H)
            if stepwise:
                return visit(f"{stack}.hook_out", x[:, 0], step=done[0]).unsqueeze(1)
            return visit(f"{stack}.hook_out", x)

        def advance(_module, args, _output):
            done[0] += args[0].shape[1]  # batch first: (B, T, I)

        handles.append(output_hook(embedding, lambda x: visit(f"{stack}.hook_embed", x)))
        handles.append(set_attribute(rnn, "activation_hook", site))
        handles.append(output_hook(rnn, out))
        handles.append(rnn.register_forward_hook(advance))

    @staticmethod
    def _attach_alignment(model, visit, handles):
        calls = [0]

        def site(_kind, weights):  # (B, Tq, Ts)
            if model.style == "bahdanau":  # one query per call: the previous decoder state
                calls[0] += 1
                return visit("decoder.cross_attn.hook_pattern", weights[:, 0], step=calls[0] - 1).unsqueeze(1)
            return visit("decoder.cross_attn.hook_pattern", weights)

        handles.append(set_attribute(model.alignment, "activation_hook", site))

    def embeddings(self, model) -> dict:
        paths = family_of(model).embeddings or {}
        return {kind: module_at(model, path).weight for kind, path in paths.items()}

    def readout(self, model):
        modules = [module_at(model, path) for path in family_of(model).logit_lens]
        if not modules:
            return None

        def readout(x):
            for module in modules:
                x = module(x)
            return x

        return readout


PROVIDER = SeqModelsProvider()
