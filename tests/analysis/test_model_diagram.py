"""The architecture diagram's shapes are the ones torch's own forward hooks record on the same
model and input, for every family (tests/hf/test_hf_model_diagram.py: GPT-2 and T5)."""

from __future__ import annotations

import pytest
import torch

from explorer.analysis.architecture import (
    layout_blocks,
    symbolic,
    trace_modules,
    trace_workspace,
)
from explorer.families import family_names, get_family
from explorer.training import DataSpec, build_workspace

OUR_FAMILIES = [name for name in family_names() if not name.startswith("hf-")]


def hooked_shapes(model, inputs, **kwargs) -> dict[str, list]:
    """module name -> the output shapes of each of its calls, by plain forward hooks."""
    recorded: dict[str, list] = {}

    def flat(value):
        if isinstance(value, torch.Tensor):
            return [tuple(value.shape)]
        if isinstance(value, (list, tuple)):
            return [s for v in value for s in flat(v)]
        if isinstance(value, dict):
            return [s for v in value.values() for s in flat(v)]
        if hasattr(value, "to_tuple"):
            return flat(value.to_tuple())
        return []

    handles = [module.register_forward_hook(
        lambda _m, _a, out, name=name: recorded.setdefault(name, []).append(flat(out)))
        for name, module in model.named_modules()]
    model.eval()
    with torch.no_grad():
        model(*inputs, **kwargs)
    for handle in handles:
        handle.remove()
    return recorded


def check_against_hooks(model, inputs) -> None:
    trace = trace_modules(model, inputs, trace=True)
    expected = hooked_shapes(model, inputs, trace=True)
    got: dict[str, list] = {}
    for call in trace.calls:
        got.setdefault(call.name, []).append(call.outputs)
    assert got == expected
    # every drawn block carries the last call's output of the module it stands for
    for block in layout_blocks(trace):
        if block.step is None:
            assert block.outputs == expected[block.modules[0]][-1]


def workspace_for(family: str, **overrides):
    task = "reverse" if get_family(family).has_source else "brackets"  # pairs, or a stream
    return build_workspace(DataSpec(task=task, n_train=40, n_val=8), family, "tiny", **overrides)


def probe_inputs(workspace):
    from explorer.analysis.probe_input import default_probe_input
    from explorer.families import family_of

    source, target = default_probe_input(workspace)
    return family_of(workspace.model).encode_probe(workspace, source, target).inputs


@pytest.mark.parametrize("family", OUR_FAMILIES)
def test_shapes_equal_forward_hooks_for_every_family(family):
    workspace = workspace_for(family)
    check_against_hooks(workspace.model, probe_inputs(workspace))


def test_gpt_blocks_fold_with_their_count_and_unfold_on_request():
    workspace = workspace_for("gpt", num_layers=3)
    trace = trace_workspace(workspace, "(a(b)c)")
    folded = [b for b in layout_blocks(trace) if b.count == 3 and b.foldable]
    assert len(folded) == 1 and "× 3" in folded[0].label
    group = folded[0].key
    unfolded = layout_blocks(trace, unfolded={group})
    members = [b for b in unfolded if b.modules[0].startswith(group + ".")]
    assert [b.modules[0] for b in members] == [f"{group}.{i}" for i in range(3)]
    # the attention pattern's edge in the notes' symbols: (B, T, d) in, (B, H, T, T) out
    attention = folded[0].outputs
    assert symbolic(attention[0], trace.sizes) == "(B, T, d)"
    assert "(B, H, T, T)" in [symbolic(s, trace.sizes) for s in attention]


def test_rnn_unrolls_into_one_cell_per_time_step():
    workspace = workspace_for("rnn-lm")
    trace = trace_workspace(workspace, "(a(b)c)")
    rolled = [b for b in layout_blocks(trace) if b.recurrent]
    assert len(rolled) == 1
    steps = rolled[0].outputs[0][1]  # (B, T, H)
    unrolled = [b for b in layout_blocks(trace, unrolled=True) if b.recurrent]
    assert [b.step for b in unrolled] == list(range(1, steps + 1))
    assert all(b.outputs == [rolled[0].outputs[0][:1] + rolled[0].outputs[0][2:]] for b in unrolled)


def test_expanding_a_block_shows_its_parts():
    workspace = workspace_for("transformer")
    trace = trace_workspace(workspace, "abc", "cba")
    group = next(b for b in layout_blocks(trace) if b.count > 1).key
    layer = f"{group}.0"
    parts = layout_blocks(trace, expanded={layer}, unfolded={group})
    inside = [b.modules[0] for b in parts if b.modules[0].startswith(layer + ".")]
    assert inside and all(name.count(".") >= layer.count(".") + 1 for name in inside)
    assert layer not in [b.modules[0] for b in parts]
