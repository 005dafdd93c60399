"""What the app probes: one (source, target) pair, held by the app state (explorer/state.py).

The GUI thread sets it; the training thread reads it between steps (`make_probe_fn` in
explorer/analysis/probe.py reads `.text` at call time). Setting is one tuple assignment, atomic in
Python, so a reader never sees a source without its target. Imports nothing: the window creates
one before its first paint.
"""

from __future__ import annotations


class ProbeInput:
    def __init__(self, source: str = "", target: str = "") -> None:
        self.text = (source, target)
        # an explorer.analysis.explain.ExplainRequest the training probe also computes (the
        # attribution view sets it while it is shown and following); None: nothing more
        self.explanation = None
        # panel id -> its live function (explorer/panel_registry.py): every probe runs the ones
        # here, the panels in sight (the UI keeps it so); replaced whole, never changed in place
        self.live: dict = {}

    def want_live(self, panel_id: str, function=None) -> None:
        """Run `function` on every probe for `panel_id` (None: no more)."""
        live = {k: v for k, v in self.live.items() if k != panel_id}
        self.live = live if function is None else {**live, panel_id: function}

    def set(self, source: str, target: str = "") -> None:
        self.text = (source, target)

    def __bool__(self) -> bool:
        return any(self.text)


def default_probe_input(workspace) -> tuple[str, str]:
    """A validation example of the workspace's data (or training example), else a text in the
    model's vocabulary (a user's model of five letters would read a fixed phrase as all <unk>)."""
    data = getattr(workspace, "data", None)
    for split in ("val", "train", "test"):
        pairs = getattr(data, split, None) if data is not None else None
        if pairs:
            source, target = pairs[0]
            return source, target
    from explorer.analysis.vocabulary import FALLBACK_PHRASE, probe_text

    tokenizer = getattr(workspace, "tokenizer", None)
    target = FALLBACK_PHRASE if tokenizer is None else probe_text(tokenizer)
    source_tokenizer = getattr(workspace, "src_tokenizer", None)
    return (target if source_tokenizer is None else probe_text(source_tokenizer)), target
