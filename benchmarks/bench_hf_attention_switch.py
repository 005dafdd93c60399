"""The attention panel switching layers and heads on a GPT-2-small-sized model at 256 tokens.

Target (issue 13): a layer or head switch shows its map in < 50 ms. A random GPT-2-small-sized
model (12 layers x 12 heads, 768 wide, 50,257 tokens; bench_hf_decode.build_model, no download)
is opened the way the app opens it, a 256-token text is probed once (the app's own probe: every
layer's attention weights), and the real AttentionPanel is driven offscreen: each switch sets the
layer or head combo box (as a click does; the panel redraws from its signal) and then repaints
the heatmap synchronously, so the time covers the selection, colour-mapping the 256 x 256 map,
setting the image and painting it. Layers and heads are picked at random, alternating layer and
head switches; also timed: a switch with the "mean of heads" view, and the model view of all
144 heads (target < 100 ms): turning it on (the first time and again after turning it off), and a
probe update while it is on (a new snapshot of the same shape, as training's re-probes bring),
each until the grid is laid out and painted. `--profile` prints cProfile's top functions of one model-view
turn-on and one update.

    python benchmarks/bench_hf_attention_switch.py [--switches 200] [--tokens 256] [--threads 1]
        [--model-view-rounds 10] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model-view-rounds", type=int, default=10)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    import numpy as np
    import torch
    from PySide6.QtCore import qInstallMessageHandler
    from PySide6.QtWidgets import QApplication

    torch.set_num_threads(args.threads)
    app = QApplication.instance() or QApplication([])
    qInstallMessageHandler(lambda *_: None)  # the offscreen platform's propagateSizeHints notice

    from bench_hf_decode import build_model

    from explorer.analysis.probe import probe
    from explorer.hf import open_hf_model
    from explorer.ui.bus import AppBus
    from explorer.ui.panels.attention import MEAN_OF_HEADS, AttentionPanel

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-small-random"
        build_model(folder)
        workspace = open_hf_model(folder)
    text = " ".join(f"w{100 + 7 * i}" for i in range(args.tokens + 1))  # +1: the next-token target
    start = time.perf_counter()
    snapshot = probe(workspace, text, "")
    probe_s = time.perf_counter() - start
    maps = [m for m in snapshot.attention if m.kind == "decoder"]
    layers, heads = len(maps), maps[0].weights.shape[0]
    size = maps[0].weights.shape[-1]

    bus = AppBus()
    panel = AttentionPanel(bus)
    panel.resize(1000, 900)
    panel.show()
    panel.set_workspace(workspace)
    panel.show_snapshot(snapshot)
    app.processEvents()

    def switch(box, data) -> float:
        """ms from a combo-box change to the heatmap's image set and painted."""
        begin = time.perf_counter()
        box.setCurrentIndex(box.findData(data))  # currentIndexChanged -> panel.refresh()
        panel.heatmap.viewport().repaint()
        return (time.perf_counter() - begin) * 1e3

    rng = random.Random(0)
    layer_ms, head_ms, mean_ms = [], [], []
    for i in range(args.switches):
        if i % 2 == 0:
            current = panel.layer_box.currentData()
            layer = rng.choice([k for k in range(layers) if k != current])
            layer_ms.append(switch(panel.layer_box, layer))
        else:
            current = panel.head_box.currentData()
            head = rng.choice([h for h in range(heads) if h != current])
            head_ms.append(switch(panel.head_box, head))
        app.processEvents()
    for _ in range(max(10, args.switches // 10)):
        switch(panel.head_box, 0)
        mean_ms.append(switch(panel.head_box, MEAN_OF_HEADS))
    def timed_ms(action) -> float:
        """ms from `action` to the model view laid out (posted layout requests) and painted."""
        begin = time.perf_counter()
        action()
        app.processEvents()
        panel.grid.viewport().repaint()
        return (time.perf_counter() - begin) * 1e3

    def reshuffled(k: int):
        """The snapshot with every map's keys rolled by k: new numbers, the same shapes."""
        return dataclasses.replace(snapshot, attention=[
            dataclasses.replace(m, weights=np.roll(m.weights, k, axis=-1)) for m in snapshot.attention])

    def profiled(action, title: str) -> None:
        profiler = cProfile.Profile()
        profiler.runcall(timed_ms, action)
        print(f"--- cProfile: {title} (top 18 by cumulative time)")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)

    panel.select("decoder", 0, 0)
    app.processEvents()
    if args.profile:
        profiled(lambda: panel.model_view_box.setChecked(True), "model view on, first time")
        profiled(lambda: panel.show_snapshot(reshuffled(1)), "probe update, model view on")
        panel.model_view_box.setChecked(False)
        app.processEvents()
    first_on_ms = timed_ms(lambda: panel.model_view_box.setChecked(True))
    app.processEvents()
    on_ms, update_ms = [], []
    for k in range(args.model_view_rounds):
        update_ms.append(timed_ms(lambda: panel.show_snapshot(reshuffled(k + 2))))
        app.processEvents()
        panel.model_view_box.setChecked(False)
        app.processEvents()
        on_ms.append(timed_ms(lambda: panel.model_view_box.setChecked(True)))
        app.processEvents()

    def line(name, values):
        return (f"  {name:26s} median {statistics.median(values):6.1f} ms   p90 "
                f"{percentile(values, 0.9):6.1f} ms   max {max(values):6.1f} ms   (n={len(values)})")

    every = layer_ms + head_ms
    print(f"torch {torch.__version__}, {args.threads} thread(s); GPT-2-small-sized random model, "
          f"{layers} layers x {heads} heads, attention maps {size} x {size}")
    print(f"probe of {args.tokens} tokens (forward with weights, gradients): {probe_s:.2f} s")
    print(line("layer switch", layer_ms))
    print(line("head switch", head_ms))
    print(line("all switches", every))
    print(line("to 'mean of heads'", mean_ms))
    print(f"  model view of all {layers * heads} heads, first turn-on: {first_on_ms:.1f} ms")
    print(line("model view on again", on_ms))
    print(line("probe update, model view", update_ms))
    verdict = "PASS" if statistics.median(every) < 50 else "FAIL"
    print(f"target: a layer or head switch < 50 ms (median) -> {verdict}")
    slowest = max(first_on_ms, statistics.median(on_ms), statistics.median(update_ms))
    verdict = "PASS" if slowest < 100 else "FAIL"
    print(f"target: model view on / update < 100 ms (first turn-on, medians) -> {verdict}")
    panel.close()


if __name__ == "__main__":
    main()
