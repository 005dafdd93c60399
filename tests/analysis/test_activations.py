"""The activation layer on every family of ours: each named point against the model's own trace or
an independent recomputation from the formulas, replacement, zeroing a head, gradients, and the
model left exactly as it was."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from explorer.analysis.activations import list_points, run_with
from explorer.families import family_of, module_at
from seqmodels import build_model, make_config
from seqmodels.scores import SCORES

PAIR = ("seq2seq", "transformer")
CASES = {
    "gpt": ("gpt", {}),
    "gpt-rope": ("gpt", dict(positional="rope")),
    "bert": ("bert", {}),
    "transformer-pre": ("transformer", {}),
    "transformer-post": ("transformer", dict(norm_first=False)),
    **{f"rnn-lm-{cell}": ("rnn-lm", dict(cell=cell, num_layers=2)) for cell in ("rnn", "ugrnn", "gru", "lstm")},
    **{f"seq2seq-{score}": ("seq2seq", dict(attention=score, cell="lstm")) for score in SCORES},
    "seq2seq-gru-uni-reversed": ("seq2seq", dict(attention="dot", cell="gru", bidirectional_encoder=False,
                                                 reverse_source=True, num_layers=2)),
}


def _model(case: str):
    family, overrides = CASES[case]
    torch.manual_seed(0)
    sizes = dict(vocab_size=23, src_vocab_size=19) if family in PAIR else dict(vocab_size=23)
    return build_model(make_config(family, "tiny", **sizes, **overrides)).eval()


def _inputs(model):
    torch.manual_seed(1)
    if family_of(model).has_source:
        src = torch.randint(5, 19, (2, 7))
        src[1, 5:] = 0  # padding: every analysis probes ragged batches too
        return (src, torch.randint(5, 23, (2, 5)))
    return (torch.randint(5, 23, (2, 6)),)


def _traced(model, inputs):
    output = model(*inputs, trace=True)
    return output[0], output[-1]


def _stack_embedding(model, stack, inputs):
    path, index = family_of(model).stacks[stack]
    tokens = inputs[index]
    if stack == "encoder" and getattr(model.config, "reverse_source", False):
        tokens = tokens.gather(1, model.reading_order(tokens.eq(0)))  # the encoder reads it reversed
    return module_at(model, path)(tokens)


def _heads(x, attention):
    b, t, _ = x.shape
    return x.view(b, t, attention.num_heads, attention.head_dim).transpose(1, 2)  # (B, H, T, Dh)


def _check_attention(values, p, label, attention, query_in, kv_in, checked):
    """z from the recorded pattern and the value projection; the output from out_proj."""
    e = attention.embed_dim
    v = _heads(F.linear(kv_in, attention.in_proj_weight[2 * e:], attention.in_proj_bias[2 * e:]), attention)
    pattern = values[f"{p}.{label}.hook_pattern"]
    z = torch.einsum("bhqk,bhkd->bqhd", pattern, v)  # (B, Tq, H, Dh)
    assert torch.allclose(values[f"{p}.{label}.hook_z"], z, atol=1e-5)
    assert torch.allclose(values[f"{p}.hook_{label}_out"], attention.out_proj(z.flatten(2)), atol=1e-5)
    checked |= {f"{p}.{label}.hook_pattern", f"{p}.{label}.hook_z", f"{p}.hook_{label}_out"}


def _check_block(values, p, block, memory, checked):
    """The block's residual stream recomputed from its recorded sub-layer outputs (Vaswani / pre-norm)."""
    x, a = values[f"{p}.hook_resid_pre"], values[f"{p}.hook_attn_out"]
    cross = hasattr(block, "multihead_attn")
    if block.norm_first:
        _check_attention(values, p, "attn", block.self_attn, block.norm1(x), block.norm1(x), checked)
        x = x + a
        if cross:
            _check_attention(values, p, "cross_attn", block.multihead_attn, block.norm2(x), memory, checked)
            x = x + values[f"{p}.hook_cross_attn_out"]
        ff_in = (block.norm3 if cross else block.norm2)(x)
        m = block.feed_forward(ff_in)
        post = x + m
    else:
        _check_attention(values, p, "attn", block.self_attn, x, x, checked)
        x = block.norm1(x + a)
        if cross:
            _check_attention(values, p, "cross_attn", block.multihead_attn, x, memory, checked)
            x = block.norm2(x + values[f"{p}.hook_cross_attn_out"])
        m = block.feed_forward(x)
        post = (block.norm3 if cross else block.norm2)(x + m)
    assert torch.allclose(values[f"{p}.hook_mlp_out"], m, atol=1e-5)
    assert torch.allclose(values[f"{p}.hook_resid_post"], post, atol=1e-5)
    checked |= {f"{p}.hook_resid_pre", f"{p}.hook_mlp_out", f"{p}.hook_resid_post"}


def _check_transformer(model, inputs, values, trace, checked):
    stacks = family_of(model).stacks
    layers = {"encoder": getattr(model, "encoder_layers", None), "decoder": getattr(model, "decoder_layers", None)}
    norms = {"encoder": getattr(model, "encoder_norm", None), "decoder": getattr(model, "decoder_norm", None)}
    maps = {(m.kind, m.layer): m.weights for m in trace.attention}
    for stack in stacks:
        blocks = layers[stack] if layers[stack] is not None else model.layers
        norm = norms[stack] if norms[stack] is not None else model.final_norm
        assert torch.equal(values[f"{stack}.hook_embed"], _stack_embedding(model, stack, inputs))
        assert torch.equal(values[f"{stack}.blocks.0.hook_resid_pre"], values[f"{stack}.hook_embed"])
        checked.add(f"{stack}.hook_embed")
        for k, block in enumerate(blocks):
            p = f"{stack}.blocks.{k}"
            if k:
                assert torch.equal(values[f"{p}.hook_resid_pre"], values[f"{stack}.blocks.{k - 1}.hook_resid_post"])
            assert torch.equal(values[f"{p}.attn.hook_pattern"], maps[(stack, k)])  # what the panels draw
            assert torch.equal(values[f"{p}.hook_resid_post"], trace.hidden[f"{stack}.layer{k}"][0])
            if hasattr(block, "multihead_attn"):
                assert torch.equal(values[f"{p}.cross_attn.hook_pattern"], maps[("cross", k)])
            _check_block(values, p, block, values.get("encoder.hook_out"), checked)
        assert torch.equal(values[f"{stack}.hook_out"], norm(values[f"{stack}.blocks.{len(blocks) - 1}.hook_resid_post"]))
        checked.add(f"{stack}.hook_out")


def _check_recurrent(model, inputs, values, trace, checked):
    for stack in family_of(model).stacks:
        assert torch.equal(values[f"{stack}.hook_embed"], _stack_embedding(model, stack, inputs))
        checked.add(f"{stack}.hook_embed")
        top = []
        for layer, steps in trace.hidden.items():
            if not layer.startswith(stack + "."):
                continue
            short = layer.split(".", 1)[1]  # l0 or l0_reverse
            k, _, reverse = short[1:].partition("_")
            p = f"{stack}.rnn.l{k}.{'bwd' if reverse else 'fwd'}"
            assert torch.equal(values[f"{p}.hook_h"], torch.stack(steps, dim=1))
            checked.add(f"{p}.hook_h")
            if layer in trace.cell:
                assert torch.equal(values[f"{p}.hook_c"], torch.stack(trace.cell[layer], dim=1))
                checked.add(f"{p}.hook_c")
            for gate, gate_steps in trace.gates.get(layer, {}).items():
                assert torch.equal(values[f"{p}.hook_gate_{gate}"], torch.stack(gate_steps, dim=1))
                checked.add(f"{p}.hook_gate_{gate}")
            if int(k) == model.config.num_layers - 1:
                top.append(values[f"{p}.hook_h"])
        # the stack's output: the top layer's h_t, both directions, zero at padding
        expected = torch.cat(top, dim=-1)
        if stack == "encoder":
            expected = expected * inputs[0].ne(0).unsqueeze(-1)
        assert torch.equal(values[f"{stack}.hook_out"], expected)
        checked.add(f"{stack}.hook_out")
    if model.__class__.__name__ == "Seq2Seq" and model.style != "none":
        assert torch.equal(values["decoder.cross_attn.hook_pattern"], trace.attention_of("cross")[0].weights[:, 0])
        checked.add("decoder.cross_attn.hook_pattern")


@pytest.mark.parametrize("case", list(CASES))
def test_every_point_equals_the_trace_and_the_formulas(case):
    model = _model(case)
    inputs = _inputs(model)
    points = list_points(model, inputs)
    names = [p.name for p in points]
    assert len(names) == len(set(names))
    with torch.no_grad():
        logits, trace = _traced(model, inputs)
        run = run_with(model, inputs, read=names)
        assert torch.equal(run.logits, logits)
        for point in points:
            assert tuple(run.values[point.name].shape) == point.shape
        checked: set[str] = set()
        if family_of(model).recurrent:
            _check_recurrent(model, inputs, run.values, trace, checked)
        else:
            _check_transformer(model, inputs, run.values, trace, checked)
    assert checked == set(names)  # every point was compared with something independent


@pytest.mark.parametrize("case", ["gpt", "transformer-post", "bert", "rnn-lm-lstm", "rnn-lm-ugrnn",
                                  "seq2seq-additive", "seq2seq-general", "seq2seq-gru-uni-reversed"])
def test_replacing_every_point_with_its_own_value_gives_identical_logits(case):
    model = _model(case)
    inputs = _inputs(model)
    points = list_points(model, inputs)
    recorded = run_with(model, inputs, read=[p.name for p in points])

    def own(point):
        value = recorded.values[point.name]
        return (lambda v, t: value[:, t].clone()) if point.per_step else (lambda v: value.clone())

    again = run_with(model, inputs, replace={p.name: own(p) for p in points})
    assert torch.equal(again.logits, recorded.logits)
    one = points[len(points) // 2]
    assert torch.equal(run_with(model, inputs, replace={one.name: own(one)}).logits, recorded.logits)


def _changed_after(points, values, other, first_changed: str):
    """Points before `first_changed` (in the order the pass reached them) equal, which differ after."""
    names = [p.name for p in points]
    split = names.index(first_changed)
    for name in names[:split]:
        assert torch.equal(values[name], other[name]), name
    return [name for name in names[split + 1:] if not torch.equal(values[name], other[name])]


@pytest.mark.parametrize("case", ["gpt", "transformer-pre"])
def test_zeroing_a_head_changes_only_what_follows_it(case):
    model = _model(case)
    inputs = _inputs(model)
    points = list_points(model, inputs)
    names = [p.name for p in points]
    head = 2
    target = "decoder.blocks.0.attn.hook_z"

    def zero_head(z):  # (B, T, H, Dh)
        z = z.clone()
        z[:, :, head] = 0
        return z

    clean = run_with(model, inputs, read=names)
    ablated = run_with(model, inputs, read=names, replace={target: zero_head})
    z0, z1 = clean.values[target], ablated.values[target]
    assert torch.equal(z1[:, :, head], torch.zeros_like(z1[:, :, head]))
    others = [h for h in range(z0.shape[2]) if h != head]
    assert torch.equal(z0[:, :, others], z1[:, :, others])
    changed = _changed_after(points, clean.values, ablated.values, target)
    assert "decoder.blocks.0.hook_attn_out" in changed and "decoder.hook_out" in changed
    assert not torch.equal(clean.logits, ablated.logits)
    if case == "transformer-pre":  # the encoder runs first: nothing of it changes
        assert all(not n.startswith("encoder.") for n in changed)


def test_replacing_a_recurrent_state_changes_later_steps_only():
    model = _model("rnn-lm-lstm")
    inputs = _inputs(model)
    points = list_points(model, inputs)
    name, step = "lm.rnn.l0.fwd.hook_h", 2
    clean = run_with(model, inputs, read=[name, "lm.rnn.l1.fwd.hook_h"])
    patched = run_with(model, inputs, read=[name, "lm.rnn.l1.fwd.hook_h"],
                       replace={name: lambda h, t: torch.zeros_like(h) if t == step else h})
    for layer in (name, "lm.rnn.l1.fwd.hook_h"):
        assert torch.equal(clean.values[layer][:, :step], patched.values[layer][:, :step])
        assert not torch.equal(clean.values[layer][:, step + 1:], patched.values[layer][:, step + 1:])
    assert torch.equal(clean.logits[:, :step], patched.logits[:, :step])
    assert [p.per_step for p in points if p.name == name] == [True]


def test_gradients_of_points_equal_the_traces():
    model = _model("rnn-lm-gru")
    inputs = _inputs(model)
    logits, trace = _traced(model, inputs)
    loss = logits[:, -1].logsumexp(-1).sum()
    expected = torch.stack(torch.autograd.grad(loss, trace.hidden["lm.l0"]), dim=1)
    run = run_with(model, inputs, grad=["lm.rnn.l0.fwd.hook_h", "lm.hook_embed"])
    got = run.gradients(run.logits[:, -1].logsumexp(-1).sum())
    assert torch.allclose(got["lm.rnn.l0.fwd.hook_h"], expected, atol=1e-6)
    assert got["lm.hook_embed"].shape == run.values["lm.hook_embed"].shape
    assert got["lm.hook_embed"].abs().sum() > 0


def test_the_model_is_left_as_it_was():
    model = _model("seq2seq-additive").train()
    inputs = _inputs(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    points = list_points(model, inputs)
    run_with(model, inputs, read=[p.name for p in points], replace={points[3].name: lambda v, t: v * 2},
             grad=[points[0].name])
    assert model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks
        assert "activation_hook" not in vars(module)


def test_an_unknown_point_is_named_in_the_error():
    model = _model("gpt")
    with pytest.raises(ValueError, match="decoder.blocks.9.hook_z"):
        run_with(model, _inputs(model), read=["decoder.blocks.9.hook_z"])


def test_a_pattern_reads_every_point_it_matches_in_order():
    model = _model("transformer-pre")
    inputs = _inputs(model)
    names = [p.name for p in list_points(model, inputs)]
    run = run_with(model, inputs, read=["*.blocks.*.hook_resid_post", "encoder.hook_embed"])
    expected = [n for n in names if n.endswith(".hook_resid_post") or n == "encoder.hook_embed"]
    assert list(run.values) == expected
    assert run_with(model, inputs, read=["*.hook_gate_i"]).values == {}  # a pattern may match none


def test_another_thread_s_pass_meanwhile_is_not_hooked():
    import threading

    model = _model("gpt")
    inputs = _inputs(model)
    with torch.no_grad():
        bare = model(*inputs)
    seen = {}

    def replace(z):
        worker = threading.Thread(target=lambda: seen.setdefault("other", model(*inputs)))
        worker.start()  # the other thread's pass runs while this one is attached
        worker.join()
        return torch.zeros_like(z)

    ablated = run_with(model, inputs, replace={"decoder.blocks.0.attn.hook_z": replace})
    assert not torch.allclose(ablated.logits, bare)
    assert torch.allclose(seen["other"], bare, atol=1e-5)  # its heads were not zeroed


def test_a_provider_is_one_small_class_registered_by_hand():
    """The protocol as a new provider sees it: accepts + attach (with core's hook helpers)."""
    from torch import nn

    from explorer.analysis.activations import BaseProvider, output_hook, register_provider, removing
    from explorer.analysis.activations import registry

    class Toy(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.mix, self.head = nn.Embedding(10, 4), nn.Linear(4, 4), nn.Linear(4, 10)

        def forward(self, tokens):
            return self.head(torch.tanh(self.mix(self.embed(tokens))))

    class ToyProvider(BaseProvider):
        name = "toy"

        def accepts(self, model):
            return isinstance(model, Toy)

        def attach(self, model, visit):
            return removing([output_hook(model.embed, lambda x: visit("toy.hook_embed", x)),
                             output_hook(model.mix, lambda x: visit("toy.blocks.0.hook_mlp_out", x))])

    torch.manual_seed(0)
    model, tokens = Toy().eval(), torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="no activation provider knows a Toy"):
        list_points(model, (tokens,))
    provider = ToyProvider()
    register_provider(provider, last=True)
    try:
        points = list_points(model, (tokens,))
        assert [(p.name, p.kind, p.shape) for p in points] == [
            ("toy.hook_embed", "embed", (1, 3, 4)), ("toy.blocks.0.hook_mlp_out", "mlp_out", (1, 3, 4))]
        run = run_with(model, (tokens,), read=["toy.blocks.0.hook_mlp_out"],
                       replace={"toy.hook_embed": torch.zeros_like})
        assert torch.equal(run.values["toy.blocks.0.hook_mlp_out"], model.mix.bias.detach().expand(1, 3, 4))
        assert torch.allclose(run.logits, model.head(torch.tanh(model.mix.bias)).expand(1, 3, 10))
    finally:
        registry._FALLBACKS.remove(provider)  # other tests' providers stay


def test_replacing_a_gate_is_what_the_cell_goes_on_with():
    """Forget gate zeroed at step 2: c_2 = i_2 * g_2 (the LSTM's update without c_1), and h_2 = o_2 * tanh(c_2)."""
    model = _model("rnn-lm-lstm")
    inputs = _inputs(model)
    p = "lm.rnn.l0.fwd"
    names = [f"{p}.hook_{q}" for q in ("gate_i", "gate_f", "gate_g", "gate_o", "c", "h")]
    run = run_with(model, inputs, read=names,
                   replace={f"{p}.hook_gate_f": lambda f, t: torch.zeros_like(f) if t == 2 else f})
    v = {name.rsplit("hook_", 1)[1]: run.values[name][:, 2] for name in names}
    assert torch.equal(v["gate_f"], torch.zeros_like(v["gate_f"]))
    assert torch.allclose(v["c"], v["gate_i"] * v["gate_g"], atol=1e-6)
    assert torch.allclose(v["h"], v["gate_o"] * torch.tanh(v["c"]), atol=1e-6)


def test_a_model_of_ours_imports_no_transformers():
    # the Hugging Face provider is imported only once transformers is: importing it for our models
    # cost seconds and raced the GUI thread's own import from a probe's worker thread
    import subprocess
    import sys

    code = ("import sys, torch\n"
            "from explorer.analysis.activations import list_points, run_with\n"
            "from seqmodels import build_model, make_config\n"
            "model = build_model(make_config('gpt', vocab_size=11, d_model=16, num_heads=2,"
            " num_layers=1, d_ff=32, max_len=16))\n"
            "names = [p.name for p in list_points(model, (torch.tensor([[1, 2, 3]]),))]\n"
            "run_with(model, (torch.tensor([[1, 2, 3]]),), read=names[:2])\n"
            "assert 'transformers' not in sys.modules, 'transformers was imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
