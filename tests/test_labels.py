"""Layers and heads are numbered from 1 for people (as the lecture notes write "layer 1")."""

import pytest

from explorer.analysis.labels import head_label, layer_head_label, layer_label, stack_layer_label


@pytest.mark.parametrize("name, label", [
    ("l0", "layer 1"),
    ("lm.l1", "layer 2"),
    ("encoder.l0", "encoder layer 1"),
    ("encoder.l0_reverse", "encoder layer 1 (backward)"),
    ("decoder.layer3", "decoder layer 4"),
    ("blocks (depth)", "blocks (depth)"),  # not a layer's name: as it is
])
def test_model_names_of_layers_read_from_one(name, label):
    assert stack_layer_label(name) == label


def test_short_labels_sit_under_an_axis_titled_layer():
    assert stack_layer_label("decoder.layer1", short=True) == "decoder 2"
    assert stack_layer_label("lm.l0", short=True) == "layer 1"


def test_indices_read_from_one():
    assert layer_label(0) == "layer 1" and head_label(1) == "head 2"
    assert layer_head_label(2, 0) == "layer 3 · head 1"
