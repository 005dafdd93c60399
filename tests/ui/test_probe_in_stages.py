"""The first probe of an opened model in stages (issue 22): the attention maps of one forward pass
without autograd reach the attention panel first, the gradients and hidden states follow."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402

from explorer.analysis import probe as probe_module  # noqa: E402
from tests.hf.conftest import hf_models  # noqa: E402,F401 - the tiny model folders

LOAD_MS = 60_000
PANELS = ("attention", "gradients", "hidden")


def test_an_opened_hf_folder_shows_its_attention_after_one_forward_pass(
        make_main_window, qtbot, hf_models, monkeypatch):
    from transformers import AutoModelForCausalLM

    events = []  # ("forward", thread) of every pass of the opened model, ("maps", thread)
    real_stages = probe_module.probe_stages

    def marked_stages(*args, **kwargs):  # the Prober's probe, noting when its maps are handed over
        stages = real_stages(*args, **kwargs)
        maps = next(stages)
        events.append(("maps", threading.get_ident()))
        yield maps
        return (yield from stages)

    monkeypatch.setattr(probe_module, "probe_stages", marked_stages)
    window = make_main_window()  # never shown: every panel draws what it gets at once
    panels = {name: window.panels[name] for name in PANELS}
    filled = []  # the panels with content after each delivery, in order

    def count_forwards(workspace) -> None:
        workspace.model.register_forward_hook(
            lambda *_: events.append(("forward", threading.get_ident())))

    def note_content(_snapshot) -> None:  # connected after the panels: they have drawn
        filled.append([name for name, panel in panels.items() if panel.has_content()])

    window.bus.workspace_changed.connect(count_forwards)  # before the probe is submitted
    window.bus.probe_attention.connect(note_content)
    window.bus.probe.connect(note_content)
    with qtbot.waitSignal(window.bus.probe, timeout=LOAD_MS) as blocker:
        window.open_path(str(hf_models("gpt2")))
    complete = blocker.args[0]

    assert filled == [["attention"], list(PANELS)]
    maps_at = next(k for k, (what, _) in enumerate(events) if what == "maps")
    probe_thread = events[maps_at][1]  # the Prober's; other panels may decode in theirs
    assert [e for e in events[:maps_at] if e[1] == probe_thread] == [("forward", probe_thread)]
    assert panels["attention"].snapshot is complete and complete.grad_depth is not None

    # the maps drawn first are transformers' own attention weights for the probed text
    workspace = window.bus.workspace
    ids = probe_module.encode_probe_input(workspace, *window.bus.state.probe.text).inputs[0]
    reference = AutoModelForCausalLM.from_pretrained(hf_models("gpt2"), attn_implementation="eager")
    with torch.no_grad():
        expected = reference(ids, output_attentions=True).attentions
    assert len(complete.attention) == len(expected)
    for drawn, theirs in zip(complete.attention, expected):
        np.testing.assert_allclose(drawn.weights, theirs[0].numpy(), atol=1e-6)
