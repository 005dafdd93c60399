"""The open model as blocks, from a traced forward pass (no picture drawn per family).

`trace_modules(model, inputs)` runs one forward pass with a torch forward hook on every module
and records each call: the module's dotted name, class, and the shapes of the tensors that went
in and came out. `layout_blocks(trace, expanded, unfolded, unrolled)` turns those calls into the
blocks the architecture panel draws, top to bottom in call order:

* the model's children, descending into containers that are never called themselves
  (ModuleList) and into any block the user `expanded`;
* runs of numbered siblings of one class (`blocks.0`, `blocks.1`, ...) folded into one block
  with a count, unless their parent is in `unfolded`;
* a recurrent layer drawn rolled (one block, the loop over T) or, when `unrolled`, as one cell
  per time step of the probe.

Shapes are concrete (what hooks saw); `symbolic(shape, sizes)` writes them with the names the
notes use: (B, T, d) → (B, H, T, T).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import torch

from explorer.analysis.this_thread import this_thread_only

_INDEX = re.compile(r"^(.*)\.(\d+)$")
TRACE_BATCH = 3
MIN_TOP_BLOCKS = 4  # fewer blocks at the top: the model is a wrapper, open it


@dataclass
class ModuleCall:
    name: str  # dotted path from the model ("" is the model itself)
    kind: str  # the module's class name
    inputs: list[tuple[int, ...]]  # shapes of the tensors passed in, in order
    outputs: list[tuple[int, ...]]  # shapes of the tensors returned (tuples and dicts flattened)
    order: int  # when the call started (pre-hook order)


@dataclass
class ModelTrace:
    calls: list[ModuleCall]
    children: dict[str, list[str]]  # module name -> its direct children's names, in model order
    kinds: dict[str, str]  # module name -> class name (called or not)
    recurrent: set[str] = field(default_factory=set)  # modules that loop over time inside one call
    sizes: dict[str, int] = field(default_factory=dict)  # symbol -> size for `symbolic`

    def calls_of(self, name: str) -> list[ModuleCall]:
        return [c for c in self.calls if c.name == name]

    def called(self, name: str) -> bool:
        """The module or something inside it ran."""
        prefix = name + "." if name else ""
        return any(c.name == name or c.name.startswith(prefix) for c in self.calls)


@dataclass
class Block:
    key: str  # what a click on it toggles: the module name, or the folded group's parent
    label: str  # "blocks.0–3: TransformerBlock × 4"
    kind: str
    modules: list[str]  # the modules it stands for
    inputs: list[tuple[int, ...]]
    outputs: list[tuple[int, ...]]
    count: int = 1  # folded repeats, or time steps of a rolled recurrent layer
    foldable: bool = False  # a folded group (click unfolds) or an unfolded one (click folds)
    expandable: bool = False  # has called children to show
    recurrent: bool = False
    step: int | None = None  # the time step of an unrolled cell


def _shapes(value) -> list[tuple[int, ...]]:
    if isinstance(value, torch.Tensor):
        return [tuple(value.shape)]
    if isinstance(value, (list, tuple)):
        return [s for item in value for s in _shapes(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _shapes(item)]
    if hasattr(value, "to_tuple"):  # Hugging Face ModelOutput
        return _shapes(value.to_tuple())
    return []


def _is_recurrent(module) -> bool:
    from seqmodels.recurrent import RNN

    return isinstance(module, (RNN, torch.nn.RNNBase))


def trace_modules(model: torch.nn.Module, inputs: tuple, **kwargs) -> ModelTrace:
    """One forward pass `model(*inputs, **kwargs)` with hooks on every module; the model is left
    as it was (hooks removed, train/eval mode restored, no gradients)."""
    calls: list[ModuleCall] = []
    started: dict[int, list[int]] = {}  # module -> the order numbers of its calls still running
    counter = itertools.count()
    names = {id(module): name for name, module in model.named_modules()}
    handles = []

    @this_thread_only  # another thread's forward (training) runs through the hooks too
    def before(module, args, kw):
        started.setdefault(id(module), []).append(next(counter))

    @this_thread_only
    def after(module, args, kw, output):
        order = started[id(module)].pop()
        inputs_ = _shapes(list(args) + list(kw.values()))
        calls.append(ModuleCall(names[id(module)], type(module).__name__, inputs_, _shapes(output),
                                order))

    for module in model.modules():
        handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(module.register_forward_hook(after, with_kwargs=True))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(*inputs, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    calls.sort(key=lambda c: c.order)
    children: dict[str, list[str]] = {}
    kinds, recurrent = {}, set()
    for name, module in model.named_modules():
        kinds[name] = type(module).__name__
        if _is_recurrent(module):
            recurrent.add(name)
        children[name] = [f"{name}.{child}" if name else child for child, _ in module.named_children()]
    return ModelTrace(calls, children, kinds, recurrent)


def _group(names: list[str], trace: ModelTrace) -> list[list[str]]:
    """Runs of numbered siblings of one class: [[blocks.0, blocks.1], [final_norm]]."""
    groups: list[list[str]] = []
    for name in names:
        match = _INDEX.match(name)
        last = groups[-1][-1] if groups else None
        last_match = _INDEX.match(last) if last else None
        if (match and last_match and match.group(1) == last_match.group(1)
                and trace.kinds[name] == trace.kinds[last]):
            groups[-1].append(name)
        else:
            groups.append([name])
    return groups


def _visible(trace: ModelTrace, name: str, expanded: set[str]) -> list[str]:
    """The modules drawn for `name`: itself, or its called children when it is a container that
    never ran itself or was expanded."""
    kids = [c for c in trace.children.get(name, []) if trace.called(c)]
    if kids and (not trace.calls_of(name) or name in expanded or name == ""):
        return [v for kid in kids for v in _visible(trace, kid, expanded)]
    return [name]


def auto_expanded(trace: ModelTrace, least: int = MIN_TOP_BLOCKS) -> set[str]:
    """Wrappers opened by themselves: while fewer than `least` blocks show, expand the one with
    the most module calls inside (a Hugging Face adapter's `hf`, GPT-2's `transformer`)."""
    opened: set[str] = set()
    while True:
        visible = _visible(trace, "", opened)
        inside = {n: sum(c.name.startswith(n + ".") for c in trace.calls) for n in visible}
        candidates = [n for n in visible if inside[n]]
        if len(visible) >= least or not candidates:
            return opened
        opened.add(max(candidates, key=inside.get))


def _first_order(trace: ModelTrace, name: str) -> int:
    prefix = name + "."
    return min(c.order for c in trace.calls if c.name == name or c.name.startswith(prefix))


def _parent(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def layout_blocks(trace: ModelTrace, expanded=(), unfolded=(), unrolled: bool = False,
                  max_steps: int = 24) -> list[Block]:
    expanded, unfolded = set(expanded) | auto_expanded(trace), set(unfolded)
    names = sorted(_visible(trace, "", expanded), key=lambda n: _first_order(trace, n))
    blocks: list[Block] = []
    for group in _group(names, trace):
        parent = _parent(group[0])
        fold = len(group) > 1 and parent not in unfolded
        for name in ([group[0]] if fold else group):
            calls = trace.calls_of(name)
            first, last = (calls[0], calls[-1]) if calls else (None, None)
            inputs = first.inputs if first else []
            outputs = last.outputs if last else []
            expandable = any(trace.called(c) for c in trace.children.get(name, []))
            kind = trace.kinds[name]
            if fold:
                label = f"{group[0]}–{_INDEX.match(group[-1]).group(2)}: {kind} × {len(group)}"
                blocks.append(Block(parent, label, kind, list(group), inputs, outputs,
                                    len(group), foldable=True, expandable=expandable))
                continue
            recurrent = name in trace.recurrent
            steps = outputs[0][1] if recurrent and outputs and len(outputs[0]) == 3 else 1
            if recurrent and unrolled and steps > 1:
                per_step_in = [s[:1] + s[2:] for s in inputs[:1]]  # (B, I) of one step
                per_step_out = [s[:1] + s[2:] for s in outputs[:1]]  # (B, H)
                for t in range(min(steps, max_steps)):
                    blocks.append(Block(name, f"{name} t={t + 1}", kind, [name], per_step_in,
                                        per_step_out, recurrent=True, step=t + 1))
                continue
            label = f"{name}: {kind}" + (f"  ↻ T={steps}" if recurrent and steps > 1 else "")
            label += f"  ({len(calls)} calls)" if len(calls) > 1 else ""
            blocks.append(Block(name, label, kind, [name], inputs, outputs,
                                steps if recurrent else len(calls) or 1,
                                foldable=len(group) > 1, expandable=expandable,
                                recurrent=recurrent))
    return blocks


def model_sizes(config, inputs: tuple) -> dict[str, int]:
    """The symbols shapes are written with: B (batch), T (target/text), S (source), d (model or
    hidden width), H (heads), V (vocabulary), F (feed-forward width)."""
    sizes: dict[str, int] = {}
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    if tensors:
        sizes["B"] = int(tensors[0].shape[0])
        sizes["T"] = int(tensors[-1].shape[1])
        if len(tensors) > 1:
            sizes["S"] = int(tensors[0].shape[1])
    for symbol, fields in (("d", ("d_model", "hidden_size", "n_embd")), ("H", ("num_heads", "n_head")),
                           ("V", ("vocab_size",)), ("F", ("d_ff", "n_inner"))):
        for name in fields:
            value = getattr(config, name, None)
            if isinstance(value, int) and value > 1:
                sizes.setdefault(symbol, value)
                break
    return sizes


def symbolic(shape: tuple[int, ...], sizes: dict[str, int]) -> str:
    """(1, 7, 64) -> "(B, T, d)" where the sizes match (first symbol wins), else the number."""
    by_size: dict[int, str] = {}
    for symbol in ("B", "T", "S", "d", "H", "V", "F"):
        if symbol in sizes:
            by_size.setdefault(sizes[symbol], symbol)
    return "(" + ", ".join(by_size.get(n, str(n)) for n in shape) + ")"


def trace_workspace(workspace, source: str, target: str = "") -> ModelTrace:
    """Trace the workspace's model on the probe input, encoded as the probe encodes it."""
    from explorer.analysis.probe import _PROBE_LOCK
    from explorer.families import family_of

    encoded = family_of(workspace.model).encode_probe(workspace, source, target)
    device = next(workspace.model.parameters()).device
    # a batch of 3: no size-1 dimension is mistaken for the batch in the symbols
    inputs = tuple(t.to(device).repeat(TRACE_BATCH, *[1] * (t.dim() - 1)) for t in encoded.inputs)
    with _PROBE_LOCK:  # the probe's forward passes must not run through our hooks meanwhile
        trace = trace_modules(workspace.model, inputs, trace=True)
    trace.sizes = model_sizes(workspace.model.config, inputs)
    return trace


def call_tables(trace: ModelTrace) -> dict[str, tuple[list[str], list[list]]]:
    """The diagram panel's table: every module call of the trace in order, with its shapes (the
    panel's CSV export and `explorer export --plots architecture --format csv` both write it)."""
    rows = [[c.order, c.name or "(model)", c.kind, " ".join(map(str, c.inputs)),
             " ".join(map(str, c.outputs))] for c in trace.calls]
    return {"calls": (["order", "module", "class", "inputs", "outputs"], rows)}
