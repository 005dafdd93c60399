"""The activation layer on tiny Hugging Face models (GPT-2, BERT, DistilBERT, Marian, T5): every
named point against transformers' own outputs (attentions, hidden states) and each block's
equations, replacement by its own value, zeroing a head, and the model left as it was."""

from __future__ import annotations

import pytest
import torch

from explorer.analysis.activations import list_points, provider_for, run_with
from explorer.families import family_of

pytest.importorskip("transformers")


def _sub(block, path):
    for part in path.split("."):
        block = block[int(part)] if part.lstrip("-").isdigit() else getattr(block, part)
    return block


def _first(x):
    return x[0] if isinstance(x, tuple) else x


# model -> block (with its recorded points v, prefix p) -> [(value, expected)]: the block's own
# equations, written out from transformers' modeling files, recomputed from its recorded sub-layers
def _gpt2(block, v, p, cross):
    mid = v[f"{p}.hook_resid_pre"] + v[f"{p}.hook_attn_out"]
    return [(v[f"{p}.hook_attn_out"], block.attn.c_proj(v[f"{p}.attn.hook_z"].flatten(2))),
            (v[f"{p}.hook_mlp_out"], block.mlp(block.ln_2(mid))),
            (v[f"{p}.hook_resid_post"], mid + v[f"{p}.hook_mlp_out"])]


def _bert(block, v, p, cross):
    a = block.attention.output.LayerNorm(v[f"{p}.hook_attn_out"] + v[f"{p}.hook_resid_pre"])
    return [(v[f"{p}.hook_attn_out"], block.attention.output.dense(v[f"{p}.attn.hook_z"].flatten(2))),
            (v[f"{p}.hook_mlp_out"], block.output.dense(block.intermediate(a))),
            (v[f"{p}.hook_resid_post"], block.output.LayerNorm(v[f"{p}.hook_mlp_out"] + a))]


def _distilbert(block, v, p, cross):
    a = block.sa_layer_norm(v[f"{p}.hook_attn_out"] + v[f"{p}.hook_resid_pre"])
    return [(v[f"{p}.hook_attn_out"], block.attention.out_lin(v[f"{p}.attn.hook_z"].flatten(2))),
            (v[f"{p}.hook_mlp_out"], block.ffn(a)),
            (v[f"{p}.hook_resid_post"], block.output_layer_norm(v[f"{p}.hook_mlp_out"] + a))]


def _marian(block, v, p, cross):
    h = block.self_attn_layer_norm(v[f"{p}.hook_resid_pre"] + v[f"{p}.hook_attn_out"])
    pairs = [(v[f"{p}.hook_attn_out"], block.self_attn.out_proj(v[f"{p}.attn.hook_z"].flatten(2)))]
    if cross:
        pairs.append((v[f"{p}.hook_cross_attn_out"], block.encoder_attn.out_proj(v[f"{p}.cross_attn.hook_z"].flatten(2))))
        h = block.encoder_attn_layer_norm(h + v[f"{p}.hook_cross_attn_out"])
    return pairs + [(v[f"{p}.hook_mlp_out"], block.fc2(block.activation_fn(block.fc1(h)))),
                    (v[f"{p}.hook_resid_post"], block.final_layer_norm(h + v[f"{p}.hook_mlp_out"]))]


def _t5(block, v, p, cross):
    h = v[f"{p}.hook_resid_pre"] + v[f"{p}.hook_attn_out"]
    pairs = [(v[f"{p}.hook_attn_out"], block.layer[0].SelfAttention.o(v[f"{p}.attn.hook_z"].flatten(2)))]
    if cross:
        pairs.append((v[f"{p}.hook_cross_attn_out"], block.layer[1].EncDecAttention.o(v[f"{p}.cross_attn.hook_z"].flatten(2))))
        h = h + v[f"{p}.hook_cross_attn_out"]
    ff = block.layer[-1]
    return pairs + [(v[f"{p}.hook_mlp_out"], ff.DenseReluDense(ff.layer_norm(h))),
                    (v[f"{p}.hook_resid_post"], h + v[f"{p}.hook_mlp_out"])]


EQUATIONS = {"gpt2": _gpt2, "bert": _bert, "distilbert": _distilbert, "marian": _marian, "t5": _t5}
BLOCKS = {"gpt2": {"decoder": "transformer.h"}, "bert": {"encoder": "bert.encoder.layer"},
          "distilbert": {"encoder": "distilbert.transformer.layer"},
          "marian": {"encoder": "model.encoder.layers", "decoder": "model.decoder.layers"},
          "t5": {"encoder": "encoder.block", "decoder": "decoder.block"}}


def _inputs(workspace):
    model = workspace.model
    src = torch.tensor([workspace.tokenizer.encode("the cat sat on the mat")[:6]] * 2)
    if family_of(model).has_source:
        tgt = torch.tensor([[model.config.start_id] + workspace.tokenizer.encode_target("der hund")[:-1]] * 2)
        return (src, tgt)
    return (src,)


@pytest.mark.parametrize("name", list(EQUATIONS))
def test_every_point_equals_transformers_outputs_and_the_block_equations(hf_workspace, name):
    workspace = hf_workspace(name)
    model = workspace.model.eval()
    inputs = _inputs(workspace)
    points = list_points(model, inputs)
    names = [p.name for p in points]
    with torch.no_grad():
        logits, trace = model(*inputs, trace=True)
        run = run_with(model, inputs, read=names)
        assert torch.equal(run.logits, logits)
        v, checked = run.values, set()
        maps = {(m.kind, m.layer): m.weights for m in trace.attention}
        for stack, path in BLOCKS[name].items():
            blocks = _sub(model.hf, path)
            assert torch.equal(v[f"{stack}.hook_embed"], trace.hidden[f"{stack}.embed"][0])
            assert torch.equal(v[f"{stack}.hook_out"], trace.hidden[f"{stack}.layer{len(blocks) - 1}"][0])
            checked |= {f"{stack}.hook_embed", f"{stack}.hook_out"}
            for k, block in enumerate(blocks):
                p = f"{stack}.blocks.{k}"
                before = v[f"{stack}.hook_embed"] if k == 0 else v[f"{stack}.blocks.{k - 1}.hook_resid_post"]
                assert torch.equal(v[f"{p}.hook_resid_pre"], before)
                if k < len(blocks) - 1:  # the last is before the final norm, hidden_states after it
                    assert torch.equal(v[f"{p}.hook_resid_post"], trace.hidden[f"{stack}.layer{k}"][0])
                assert torch.equal(v[f"{p}.attn.hook_pattern"], maps[(stack, k)])
                cross = f"{p}.cross_attn.hook_pattern" in v
                if cross:
                    assert torch.equal(v[f"{p}.cross_attn.hook_pattern"], maps[("cross", k)])
                for value, expected in EQUATIONS[name](block, v, p, cross):
                    assert torch.allclose(_first(value), _first(expected), atol=1e-5)
                checked |= {n for n in names if n.startswith(p + ".")}
        assert checked == set(names)


@pytest.mark.parametrize("name", ["gpt2", "bert", "marian", "t5"])
def test_replacing_every_point_with_its_own_value_gives_identical_logits(hf_workspace, name):
    model = hf_workspace(name).model.eval()
    inputs = _inputs(hf_workspace(name))
    names = [p.name for p in list_points(model, inputs)]
    recorded = run_with(model, inputs, read=names)
    again = run_with(model, inputs, replace={n: (lambda x, n=n: recorded.values[n].clone()) for n in names})
    assert torch.equal(again.logits, recorded.logits)


@pytest.mark.parametrize("name,target", [("gpt2", "decoder.blocks.0.attn.hook_z"),
                                         ("marian", "decoder.blocks.1.cross_attn.hook_z"),
                                         ("t5", "decoder.blocks.0.cross_attn.hook_pattern")])
def test_zeroing_a_head_changes_only_what_follows_it(hf_workspace, name, target):
    model = hf_workspace(name).model.eval()
    inputs = _inputs(hf_workspace(name))
    names = [p.name for p in list_points(model, inputs)]
    head = 1

    def zero(x):  # z (B, T, H, Dh) or a pattern (B, H, Tq, Tk)
        x = x.clone()
        if x.shape[1] == x.shape[-2] or target.endswith("pattern"):
            x[:, head] = 0
        else:
            x[:, :, head] = 0
        return x

    clean = run_with(model, inputs, read=names)
    ablated = run_with(model, inputs, read=names, replace={target: zero})
    split = names.index(target)
    for n in names[:split]:
        assert torch.equal(clean.values[n], ablated.values[n]), n
    changed = [n for n in names[split + 1:] if not torch.equal(clean.values[n], ablated.values[n])]
    assert changed and names[-1] in changed
    assert not torch.equal(clean.logits, ablated.logits)


def test_gpt2_readout_and_embeddings_are_the_model_s_own(hf_workspace):
    model = hf_workspace("gpt2").model.eval()
    inputs = _inputs(hf_workspace("gpt2"))
    provider = provider_for(model)
    run = run_with(model, inputs, read=["decoder.blocks.1.hook_resid_post"])
    with torch.no_grad():
        assert torch.allclose(provider.readout(model)(run.values["decoder.blocks.1.hook_resid_post"]), run.logits, atol=1e-5)
    weights = provider.embeddings(model)
    assert weights["input"] is model.hf.get_input_embeddings().weight
    assert weights["output"] is model.hf.get_output_embeddings().weight


def test_the_model_is_left_as_it_was(hf_workspace):
    model = hf_workspace("marian").model.eval()
    implementation = model.hf.config._attn_implementation

    def hooks():  # transformers installs hooks of its own (output capturing): those stay
        return [(dict(m._forward_hooks), dict(m._forward_pre_hooks)) for m in model.modules()]

    before = hooks()
    names = [p.name for p in list_points(model, _inputs(hf_workspace("marian")))]
    run_with(model, _inputs(hf_workspace("marian")), read=names, grad=[names[0]])
    assert model.hf.config._attn_implementation == implementation
    assert hooks() == before
