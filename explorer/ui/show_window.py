"""`explorer.show(model, tokenizer)`: the app's window on a model the user built in Python.

    explorer.show(model, vocab, kind="seq2seq", source="a b c", data=[("a b c", "c b a")])

From a script it blocks until the window closes. In IPython or Jupyter with the Qt event loop
integration on (`%gui qt`) it returns at once and the window lives beside the prompt; a second
call puts the new model (or the same model with new weights) into the open window.

The window: one per process, reused by every later call.

A script blocks in the Qt event loop until the window closes; under IPython's `%gui qt` the loop
already runs, so the call returns with the window open. A later call while it is open puts the new
workspace into it (the controller's set_workspace: panels redraw, the probe input resets to the
new data's first example).
"""

from __future__ import annotations

from explorer.ui.app import create_application

_window = None  # the open window, if any


def show(model, tokenizer, kind: str | None = None, source: str | None = None, data=None,
         adapter=None, src_tokenizer=None, block: bool | None = None):
    """Open (or update) the explorer's window on `model`.

    kind: "lm" or "seq2seq" (None: from forward's signature); adapter: an explorer.Adapter
    (encode/step for fast decoding, special tokens, module names); source: the text the panels
    probe first; data: examples, (source, target) pairs for a seq2seq or texts for an LM, which the
    panels pick inputs from and BLEU is computed on; block: None decides (blocks unless IPython's
    Qt event loop runs). Returns the window."""
    from explorer.usermodel.show import ipython_qt_loop, shown_workspace

    workspace = shown_workspace(model, tokenizer, kind, source, data, adapter, src_tokenizer)
    return show_workspace(workspace, block=ipython_qt_loop() is None if block is None else block)


def new_window():
    from explorer.ui.main_window import MainWindow

    return MainWindow(load_demo=False)


def show_workspace(workspace, block: bool = True):
    global _window
    app = create_application()
    window = _window
    if window is not None and window.isVisible():
        if window.panels:  # started up: the startup model is in
            window.controller.set_workspace(workspace)
        else:  # not painted yet: the startup picks it up
            window.startup_model = workspace
        window.raise_()
        return window
    window = new_window()
    window.startup_model = workspace
    window.show()
    _window = window
    if block:
        app.exec()
        _window = None
    return window
