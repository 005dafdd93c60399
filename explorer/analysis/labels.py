"""Names of layers, heads and blocks for people: numbered from 1, as the lecture notes number
layers ("layer 1" is the one nearest the input), in every panel and export. Code keeps indices
0-based; only what a person reads goes through here.
"""

from __future__ import annotations

import re

# a model's name for a layer's states: "l0", "encoder.l1", "decoder.layer0", "lm.l0_reverse"
_LAYER_NAME = re.compile(r"^(?:(?P<stack>\w+?)\.)?l(?:ayer)?(?P<index>\d+)(?P<reverse>_reverse)?$")
_STACKS = {"lm": ""}  # a language model has one stack: its layers need no stack name


def layer_label(index: int) -> str:
    """0-based layer index -> "layer 1"."""
    return f"layer {index + 1}"


def unit_label(trace_name: str, unit: int) -> str:
    """A recurrent unit's row label, its layer counted from 1 like every layer: the trace's
    "lm.l0" and unit 5 -> "l1:5"; "encoder.l0_reverse" -> "l1_reverse:5" (units are indices
    into h_t, from 0)."""
    layer = trace_name.split(".", 1)[-1]
    match = re.fullmatch(r"l(\d+)(.*)", layer)
    if match:
        layer = f"l{int(match.group(1)) + 1}{match.group(2)}"
    return f"{layer}:{unit}"


def head_label(index: int) -> str:
    """0-based head index -> "head 1"."""
    return f"head {index + 1}"


def layer_head_label(layer: int, head: int) -> str:
    return f"{layer_label(layer)} · {head_label(head)}"


def stack_layer_label(name: str, short: bool = False) -> str:
    """A model's name for one layer's states -> its label: "encoder.l0" and "encoder.layer0" ->
    "encoder layer 1", "lm.l1" -> "layer 2", "encoder.l0_reverse" -> "encoder layer 1
    (backward)". `short` drops the word "layer" after a stack ("encoder 1"), for tick labels
    under an axis titled "layer". A name of another form is returned as it is."""
    match = _LAYER_NAME.match(name)
    if match is None:
        return name
    stack = _STACKS.get(match["stack"] or "", match["stack"] or "")
    label = layer_label(int(match["index"]))
    if stack:
        label = f"{stack} {int(match['index']) + 1}" if short else f"{stack} {label}"
    return f"{label} (backward)" if match["reverse"] else label

