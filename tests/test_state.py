"""explorer.state.AppState: the app's workspace, training state and probe input with change
events, without Qt."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from explorer.state import AppState, Training


def recorder(state):
    events = []
    state.workspace_changed.connect(lambda w: events.append(("workspace", w)))
    state.probe_input_changed.connect(lambda s, t: events.append(("probe", s, t)))
    state.training_changed.connect(lambda new, old: events.append(("training", new, old)))
    return events


def with_data(*pairs):
    return SimpleNamespace(data=SimpleNamespace(val=list(pairs), train=[], test=[]))


def test_a_workspace_brings_its_first_example_as_the_probe_and_both_events_fire_in_order():
    state = AppState()
    events = recorder(state)
    first = with_data(("abc", "cba"), ("de", "ed"))
    state.set_workspace(first)
    assert events == [("workspace", first), ("probe", "abc", "cba")]
    assert state.probe_text == ("abc", "cba") and not state.same_model

    state.set_probe_input("xy", "yx")
    state.set_workspace(first)  # the same model with new weights: the input is reset all the same
    assert state.same_model and state.probe_text == ("abc", "cba")
    state.set_probe_input("xy", "yx")
    snapshot = with_data(("abc", "cba"))
    state.set_workspace(snapshot, keep_probe=True)  # another snapshot of the same run
    assert not state.same_model and state.probe_text == ("xy", "yx")
    assert events[-2:] == [("workspace", snapshot), ("probe", "xy", "yx")]

    state.set_workspace(None)
    assert state.probe_text == ("", "") and not state.probe
    assert events[-1] == ("probe", "", "")


def test_training_changes_are_announced_once_with_the_state_before():
    state = AppState()
    events = recorder(state)
    state.set_training("running", target_steps=40)
    state.set_training("running")  # no change: no event
    state.set_training("paused")
    assert events == [
        ("training", Training("running", 40), Training()),
        ("training", Training("paused", 40), Training("running", 40)),
    ]
    assert state.training.active and not Training("stopped", 40).active
    with pytest.raises(ValueError):
        state.set_training("sleeping")


def test_the_state_imports_neither_qt_nor_torch():
    code = ("import sys, explorer.state; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'torch')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
