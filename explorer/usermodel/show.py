"""The core half of `explorer.show` (explorer/ui/show_window.py): the workspace it opens, and
whether IPython's Qt event loop runs. No Qt here."""

from __future__ import annotations

from explorer.errors import UserError


def shown_workspace(model, tokenizer, kind: str | None = None, source: str | None = None,
                    data=None, adapter=None, src_tokenizer=None):
    """The workspace `explorer.show` opens: the model behind its adapter, `data` as its examples
    (every split) with `source` first, probed with the model's own greedy output as its target."""
    from dataclasses import replace

    from explorer.usermodel.adapter import Adapter
    from explorer.usermodel.loader import make_workspace

    adapter = replace(adapter or Adapter(), kind=kind or (adapter.kind if adapter else None))
    if source is not None and not isinstance(source, str):
        raise UserError(f"source: expected a text, got {type(source).__name__}")
    workspace = make_workspace(model, tokenizer, adapter, build=_class_path(model), args=None,
                               src_tokenizer=src_tokenizer)
    workspace.data = _splits(workspace, data, source)
    return workspace


def _class_path(model) -> str:
    return f"{type(model).__module__}:{type(model).__qualname__}"


def _splits(workspace, data, source):
    """The examples as the app's data (every split the same examples), `source` first."""
    from explorer.data.tasks import Splits

    seq2seq = workspace.is_seq2seq
    pairs = []
    for item in data or ():
        if seq2seq and isinstance(item, (tuple, list)) and len(item) == 2:
            pairs.append((str(item[0]), str(item[1])))
        elif not seq2seq and isinstance(item, str):
            pairs.append((item, ""))
        else:
            what = "(source, target) pairs" if seq2seq else "texts"
            raise UserError(f"data: expected {what}, got {item!r:.60}")
    if source is not None:
        pairs.insert(0, (source, _greedy_output(workspace, source) if seq2seq else ""))
    if not pairs:
        return None
    return Splits(train=list(pairs), val=list(pairs), test=[], kind="seq2seq" if seq2seq else "lm")


def _greedy_output(workspace, source: str) -> str:
    """A seq2seq's own output for `source`: the target the panels probe with."""
    from explorer.decoding import greedy
    from explorer.decoding.scoring import encode_context

    context = encode_context(workspace, source)
    return greedy(workspace.model, context, max_len=40, tokenizer=workspace.tokenizer).text


def ipython_qt_loop() -> str | None:
    """The name of IPython's running GUI event loop when it is Qt's (`%gui qt`), else None."""
    import sys

    if "IPython" not in sys.modules:
        return None
    shell = sys.modules["IPython"].get_ipython()
    loop = getattr(shell, "active_eventloop", None)
    return loop if loop and str(loop).startswith("qt") else None
