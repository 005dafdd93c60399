"""Named activation points of any model: list them, read them, replace them, keep their gradients.

    points = list_points(model, inputs)                   # [HookPoint(name, kind, shape, per_step)]
    run = run_with(model, inputs, read=["decoder.blocks.0.attn.hook_pattern"],
                   replace={"decoder.blocks.1.attn.hook_z": zero_head(2)},
                   grad=["decoder.hook_embed"])
    run.logits, run.values[name], run.gradients(loss)

`inputs` are the positional arguments of the model's forward (a tuple of tensors, what
`analysis.probe`'s `Encoded.inputs` holds). The names and what each holds are in
docs/architecture.md ("Activation points"). A *provider* knows one kind of model: it routes every
activation the model computes through `visit(name, value, step=None) -> value` while attached, and
takes its hooks away again. Everything else (which names are read or replaced, gradients,
per-step stacking, the threads) is done here, once, for every provider.
"""

from __future__ import annotations

import contextlib
import fnmatch
import threading
from dataclasses import dataclass, field
from typing import Callable, ContextManager, Iterable, Mapping, Protocol

import torch
from torch import Tensor

from explorer.analysis.activations.registry import providers

# visit(name, value, step=None) -> value: step is the position of a per-step (recurrent) value
Visit = Callable[..., Tensor]


@dataclass(frozen=True)
class HookPoint:
    name: str  # e.g. "decoder.blocks.0.attn.hook_pattern"
    kind: str  # the name's last part without "hook_": "pattern", "z", "resid_post", "h", "gate_i", ...
    shape: tuple[int, ...]  # of the inputs it was listed with; per-step points stacked (B, T, ...)
    per_step: bool = False  # computed one step at a time (recurrent): a replace fn gets (value, t)


def kind_of(name: str) -> str:
    return name.rsplit(".", 1)[-1].removeprefix("hook_")


class Provider(Protocol):
    """One kind of model (ours, Hugging Face, plain torch modules). One file in providers/."""

    name: str

    def accepts(self, model) -> bool:
        """True for the models this provider maps."""

    def attach(self, model, visit: Visit) -> ContextManager:
        """While the context is open, every forward pass of `model` calls `visit(name, value)` for
        each named activation (`visit(name, value, step=t)` for one step of a recurrent value) and
        goes on with what it returns. On exit the model is exactly as before."""

    def forward(self, model, inputs: tuple) -> Tensor:
        """The logits of one forward pass on `inputs` (BaseProvider: model(*inputs), first of a tuple)."""

    def embeddings(self, model) -> dict[str, Tensor]:
        """"input", "output" and (encoder-decoders) "source" -> that (V, D) token-embedding weight."""

    def readout(self, model) -> Callable[[Tensor], Tensor] | None:
        """The decoder's residual stream (B, T, D) -> logits (final norm, unembedding), or None."""


class BaseProvider:
    """Defaults a provider may keep: the model's forward returns logits (or a tuple led by them)."""

    name = "base"

    def forward(self, model, inputs: tuple) -> Tensor:
        out = model(*inputs)
        return out[0] if isinstance(out, tuple) else out

    def embeddings(self, model) -> dict[str, Tensor]:
        return {}

    def readout(self, model):
        return None


def output_hook(module, fn: Callable[[Tensor], Tensor]):
    """A forward hook that passes the module's output (or its first element) through fn; a handle."""

    def hook(_module, _args, output):
        if isinstance(output, tuple):
            return (fn(output[0]), *output[1:])
        return fn(output)

    return module.register_forward_hook(hook)


def input_hook(module, fn: Callable[[Tensor], Tensor]):
    """A forward pre-hook that passes the module's first positional input through fn; a handle."""

    def hook(_module, args):
        return (fn(args[0]), *args[1:])

    return module.register_forward_pre_hook(hook)


@contextlib.contextmanager
def removing(handles: list):
    """Remove every torch hook handle (and undo every callable) in `handles` on exit, last first."""
    try:
        yield handles
    finally:
        for handle in reversed(handles):
            handle() if callable(handle) else handle.remove()


def set_attribute(obj, name: str, value) -> Callable[[], None]:
    """Set obj.name = value; returns the undo (for `removing`): the attribute as it was."""
    had = name in vars(obj)
    old = vars(obj).get(name)
    setattr(obj, name, value)

    def undo() -> None:
        if had:
            setattr(obj, name, old)
        else:
            delattr(obj, name)

    return undo


# ---- the registry (explorer/analysis/activations/registry.py) ----------------------------------


def provider_for(model):
    """The first provider that accepts `model`; ValueError when none does."""
    for provider in providers():
        if provider.accepts(model):
            return provider
    raise ValueError(f"no activation provider knows a {type(model).__name__}")


# ---- running -----------------------------------------------------------------------------------

# One run_with at a time: hooks live on the shared model, and a run's hooks must meet only its pass.
_RUN_LOCK = threading.RLock()


@dataclass
class Run:
    logits: Tensor
    values: dict[str, Tensor] = field(default_factory=dict)  # read and grad points; per-step stacked
    # grad points: the very tensors the pass used (a list per step for per-step points)
    live: dict[str, Tensor | list[Tensor]] = field(default_factory=dict)

    def gradients(self, output: Tensor, names: Iterable[str] | None = None) -> dict[str, Tensor]:
        """d output / d point for the `grad` points (or `names` of them), per-step points stacked."""
        names = list(self.live if names is None else names)
        flat = [t for n in names for t in (self.live[n] if isinstance(self.live[n], list) else [self.live[n]])]
        grads = iter(torch.autograd.grad(output, flat, allow_unused=True))
        result = {}
        for n in names:
            parts = self.live[n] if isinstance(self.live[n], list) else [self.live[n]]
            got = [g if g is not None else torch.zeros_like(t) for t, g in zip(parts, grads)]  # parts first: zip stops on them
            result[n] = torch.stack(got, dim=1) if isinstance(self.live[n], list) else got[0]
        return result


class _Session:
    """What one pass does at each point: replace, keep for its gradient, record."""

    def __init__(self, read: Iterable[str], replace: Mapping[str, Callable], grad: Iterable[str],
                 read_all: bool = False):
        read = set(read)
        self.patterns = [n for n in read if "*" in n]  # "*.hook_resid_post": every block's
        self.read, self.replace, self.grad = read - set(self.patterns), dict(replace), set(grad)
        self.read_all = read_all
        self.owner = threading.get_ident()  # another thread's pass through the model goes untouched
        self.values: dict[str, Tensor | dict[int, Tensor]] = {}
        self.live: dict[str, Tensor | dict[int, Tensor]] = {}
        self.seen: dict[str, bool] = {}  # name -> per_step, in the order first visited

    def visit(self, name: str, value: Tensor, step: int | None = None) -> Tensor:
        if threading.get_ident() != self.owner:
            return value
        self.seen.setdefault(name, step is not None)
        fn = self.replace.get(name)
        if fn is not None:
            value = fn(value) if step is None else fn(value, step)
        if name in self.grad:
            if not value.requires_grad:  # frozen weights: make the point itself a leaf
                value = value.detach().requires_grad_(True)
            self._keep(self.live, name, value, step)
        if self.read_all or name in self.read or name in self.grad or self._matches(name):
            self._keep(self.values, name, value.detach(), step)
        return value

    def _matches(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.patterns)

    @staticmethod
    def _keep(into: dict, name: str, value: Tensor, step: int | None) -> None:
        if step is None:
            into[name] = value
        else:
            into.setdefault(name, {})[step] = value

    def stacked(self, into: dict, keep_steps: bool = False) -> dict:
        out = {}
        for name, value in into.items():
            if isinstance(value, dict):
                steps = [value[t] for t in sorted(value)]
                out[name] = steps if keep_steps else torch.stack(steps, dim=1)  # (B, T, ...)
            else:
                out[name] = value
        return out


def _pass(model, inputs: tuple, session: _Session, with_grad: bool, attach: bool = True) -> Tensor:
    provider = provider_for(model)
    with _RUN_LOCK, torch.set_grad_enabled(with_grad):
        if not attach:  # nothing asked for: the bare model, fused kernels and all
            return provider.forward(model, tuple(inputs))
        with provider.attach(model, session.visit):
            return provider.forward(model, tuple(inputs))


def list_points(model, inputs: tuple) -> list[HookPoint]:
    """Every named point of `model` on `inputs`, in the order the forward pass reaches them."""
    session = _Session((), {}, (), read_all=True)
    _pass(model, inputs, session, with_grad=False)
    values = session.stacked(session.values)
    return [HookPoint(name, kind_of(name), tuple(values[name].shape), per_step)
            for name, per_step in session.seen.items()]


@contextlib.contextmanager
def recording(model, read: Iterable[str]):
    """While open, every forward pass of `model` in this thread records the `read` points as
    run_with does, into the dict it gives, filled on exit (per-step points stacked): for a pass
    the caller makes itself (e.g. with trace=True). Other threads' passes wait for it."""
    session = _Session(read, {}, ())
    values: dict[str, Tensor] = {}
    with _RUN_LOCK, provider_for(model).attach(model, session.visit):
        yield values
    values.update(session.stacked(session.values))


@contextlib.contextmanager
def replacing(model, replace: Mapping[str, Callable]):
    """While open, every forward pass of `model` in this thread (a decoder's steps included)
    applies `replace` as run_with does: for work that makes its own passes (an evaluation, a
    decode). Other threads' passes wait for it (one run at a time)."""
    session = _Session((), replace, ())
    with _RUN_LOCK, provider_for(model).attach(model, session.visit):
        yield


def run_with(model, inputs: tuple, read: Iterable[str] = (), replace: Mapping[str, Callable] | None = None,
             grad: Iterable[str] = ()) -> Run:
    """One forward pass of `model` on `inputs` that records the `read` points (detached; a name with
    "*" is a pattern, fnmatch style, that may match none), applies
    `replace` (name -> fn(value) -> value; fn(value, t) for a per-step point, at every step t) and
    keeps the `grad` points in the autograd graph (`Run.gradients`). Runs without autograd unless
    `grad` names a point. The model's mode is left as it is, and its hooks as they were.
    An unknown name is a ValueError naming a few that exist."""
    read, grad, replace = list(read), list(grad), dict(replace or {})
    session = _Session(read, replace, grad)
    asked = bool(read or grad or replace)
    logits = _pass(model, inputs, session, with_grad=bool(grad), attach=asked)
    missing = [n for n in (*read, *grad, *replace) if n not in session.seen and "*" not in n]
    if missing:
        known = ", ".join(list(session.seen)[:6])
        raise ValueError(f"no activation point {missing[0]!r} in this model; it has e.g. {known}")
    return Run(logits, session.stacked(session.values), session.stacked(session.live, keep_steps=True))
