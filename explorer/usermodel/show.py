"""`explorer.show(model, tokenizer)`: the app's window on a model the user built in Python.

    explorer.show(model, vocab, kind="seq2seq", source="a b c", data=[("a b c", "c b a")])

From a script it blocks until the window closes. In IPython or Jupyter with the Qt event loop
integration on (`%gui qt`) it returns at once and the window lives beside the prompt; a second
call puts the new model (or the same model with new weights) into the open window. The window is
explorer/ui/show_window.py; this module builds the workspace (no Qt here).
"""

from __future__ import annotations

from explorer.errors import UserError


def show(model, tokenizer, kind: str | None = None, source: str | None = None, data=None,
         adapter=None, src_tokenizer=None, block: bool | None = None):
    """Open (or update) the explorer's window on `model`.

    kind: "lm" or "seq2seq" (None: from forward's signature); adapter: an explorer.Adapter
    (encode/step for fast decoding, special tokens, module names); source: the text the panels
    probe first; data: examples, (source, target) pairs for a seq2seq or texts for an LM, which the
    panels pick inputs from and BLEU is computed on; block: None decides (blocks unless IPython's
    Qt event loop runs). Returns the window."""
    from dataclasses import replace

    from explorer.usermodel.adapter import Adapter
    from explorer.usermodel.loader import make_workspace

    adapter = replace(adapter or Adapter(), kind=kind or (adapter.kind if adapter else None))
    if source is not None and not isinstance(source, str):
        raise UserError(f"source: expected a text, got {type(source).__name__}")
    workspace = make_workspace(model, tokenizer, adapter, build=_class_path(model), args=None,
                               src_tokenizer=src_tokenizer)
    workspace.data = _splits(workspace, data, source)
    from explorer.ui.show_window import show_workspace

    return show_workspace(workspace, block=ipython_qt_loop() is None if block is None else block)


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
