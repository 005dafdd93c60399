"""How long the beam tree panel takes to lay out and draw a width-16, length-50 search.

    python benchmarks/bench_beam_tree.py

Decodes with a tiny untrained Transformer (it never emits <eos>, so the search runs the full 50
steps and records 2k = 32 candidates per step), then times, separately, the numpy layout, the panel's
`set_result` (layout + updating the pyqtgraph items + labels) and one full paint of the panel.
Target: layout and drawing under 100 ms.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from explorer.analysis.beam_layout import layout_tree  # noqa: E402
from explorer.data.tokenizers import WordTokenizer  # noqa: E402
from explorer.decoding import beam_search, encode_context  # noqa: E402
from explorer.ui.bus import AppBus  # noqa: E402
from explorer.ui.panels.beam_tree import BeamTreePanel  # noqa: E402
from explorer.workspace import Workspace  # noqa: E402
from seqmodels.config import build_model, make_config  # noqa: E402

WIDTH, LENGTH, REPEATS = 16, 50, 7


def timed(fn, repeats=REPEATS) -> float:
    """Median wall time of `fn()` in milliseconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    app = QApplication.instance() or QApplication([])
    words = [f"w{i}" for i in range(200)]
    tok = WordTokenizer.train(words)
    torch.manual_seed(0)
    model = build_model(make_config("transformer", "tiny", vocab_size=tok.vocab_size,
                                    src_vocab_size=tok.vocab_size, max_len=LENGTH + 8))
    ws = Workspace(model=model, tokenizer=tok, src_tokenizer=tok)
    source = " ".join(words[:12])
    start = time.perf_counter()
    result = beam_search(model, encode_context(ws, source), beam_size=WIDTH, alpha=0.6,
                         max_len=LENGTH, nbest=5, tokenizer=tok)
    decode_ms = (time.perf_counter() - start) * 1000
    steps = max(n.step for n in result.nodes) + 1
    print(f"beam search width {WIDTH}, {steps} steps: {len(result.nodes)} nodes, "
          f"decode {decode_ms:.0f} ms (worker thread)")

    ids = np.array([n.id for n in result.nodes])
    parents = np.array([-1 if n.parent is None else n.parent for n in result.nodes])
    steps_arr = np.array([n.step for n in result.nodes])
    scores = np.array([n.score for n in result.nodes])
    print(f"layout (numpy):                {timed(lambda: layout_tree(ids, parents, steps_arr, scores)):7.2f} ms")

    panel = BeamTreePanel(AppBus())
    panel.resize(1400, 800)
    panel.show()
    app.processEvents()
    print(f"set_result (layout + items):   {timed(lambda: panel.set_result(result)):7.2f} ms")

    def draw():
        panel.set_result(result)
        panel.plot.grab()  # forces a full paint of the tree view

    print(f"set_result + full paint:       {timed(draw):7.2f} ms")
    panel.plot.getPlotItem().setRange(xRange=(0, 6), yRange=(0, 30), padding=0)
    app.processEvents()
    print(f"zoomed in: {panel.labels_shown} labels; relabel {timed(panel._update_labels):.2f} ms")

    # A synthetic tree 16x larger than the engine records, to show the headroom.
    rng = np.random.default_rng(0)
    n, per_step = 25_600, 512
    big_steps = np.repeat(np.arange(n // per_step), per_step)
    big_parents = np.where(big_steps == 0, -1,
                           (big_steps - 1) * per_step + rng.integers(0, 16, size=n))
    big_ids = np.arange(n)
    big_scores = -rng.random(n) - big_steps
    print(f"layout of a {n}-node tree:     {timed(lambda: layout_tree(big_ids, big_parents, big_steps, big_scores)):7.2f} ms")
    panel.jobs.shutdown()


if __name__ == "__main__":
    main()
