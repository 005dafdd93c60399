"""The explorer against the tools a user would reach for instead, side by side (issue 37).

Rows (both sides in one process, alternating which goes first, medians of --rounds paired rounds):

* ig-one: integrated gradients of one output token (the last), 50 steps, internal batch 50, on a
  Marian-size random translation model (opus-mt-de-en's size, set explicitly: d_model 512, 6 + 6
  layers, 8 heads, FFN 2048, 58,101 tokens; transformers' MarianConfig() defaults are twice as
  wide and deep) with 30 source and 30 target tokens;
  the peer is Captum's LayerIntegratedGradients on encoder.embed_tokens and decoder.embed_tokens
  (the decoder's a separate copy of the shared table, as Captum hooks a module, not a call),
  n_steps=50, internal_batch_size=50. The attributions must agree to 1e-4.
* ig-tol: the explorer's tolerance mode (gap <= 1% of |f(x) - f(baseline)|) on the same token
  against the same Captum call at n_steps=50; once per run, the tolerance mode on all 30 output
  tokens: the share whose gap is <= 1% and the steps each took.
* ig-all: all 30 output tokens at 50 steps, batch 50: the explorer's one call (shared forward
  passes, batched vector-Jacobian products) against Captum called once per token.
* heads: head importance 12 x 12 on a GPT-2-small-size random model (GPT2Config defaults) over a
  20-token probe, against the hook loop a TransformerLens user writes: one forward pass per head
  with a pre-hook on c_proj zeroing that head's slice of its input. Same map to 1e-4.
* gui: the GUI thread's CPU share while the default layout trains (bench_gui.app_run, its
  lateness timer slowed to 1 s so that it costs nothing), and in-app tokens/s against headless
  training at the same threads, alternating; with --gui-long-steps, each round also trains
  that many steps in the app: the difference of the two in-app runs is the share while training
  goes on, and what is left of the short run is what a run's start and finish cost once.

Peak RSS of each IG row, each side in its own child process (the model included; the RSS after
building the model is given too, so the call's own peak is the difference).

    python benchmarks/bench_peers.py --rows ig-one,ig-tol,ig-all,heads,gui --rounds 5 --threads 2
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings

ROWS = ("ig-one", "ig-tol", "ig-all", "heads", "gui")
LENGTH = 30  # source and target tokens
STEPS, BATCH = 50, 50


def _load() -> str:
    with open("/proc/loadavg") as handle:
        return " ".join(handle.read().split()[:3])


def marian():
    """(explorer model, its AttributionInput over all 30 output tokens, Captum's modules)."""
    import torch
    from transformers import MarianConfig, MarianMTModel

    from explorer.analysis.attribution_input import AttributionInput, Row, Side
    from explorer.hf.adapter import HFModelConfig, HFSeq2Seq

    torch.manual_seed(0)
    vocab = 58101
    config = MarianConfig(vocab_size=vocab, pad_token_id=vocab - 1, eos_token_id=0,  # opus-mt-de-en:
                          d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                          decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                          decoder_start_token_id=vocab - 1)
    hf = MarianMTModel(config).eval()
    hf.model.decoder.embed_tokens = copy.deepcopy(hf.model.encoder.embed_tokens)  # untied, for Captum
    model = HFSeq2Seq(hf, HFModelConfig("hf-seq2seq", "marian", vocab, 512, 512, vocab - 1, 0, vocab - 1))
    generator = torch.Generator().manual_seed(1)
    src = torch.randint(5, vocab - 100, (1, LENGTH), generator=generator)
    tgt = torch.randint(5, vocab - 100, (1, LENGTH), generator=generator)
    with torch.no_grad():  # explain the model's own most probable token at each position
        out = model(src, tgt)[0].argmax(-1).tolist()
    modules = [hf.model.encoder.embed_tokens, hf.model.decoder.embed_tokens]
    labels = [str(i) for i in range(LENGTH)]
    sides = [Side("source", 0, (modules[0],), labels, False), Side("prefix", 1, (modules[1],), labels, True)]
    rows = [Row(p, out[p], str(out[p])) for p in range(LENGTH)]
    return model, AttributionInput((src, tgt), sides, rows, [vocab - 1, vocab - 1], [1, 1]), modules


def ours_ig(model, item, rows: list[int], tolerance: float | None = None):
    from explorer.analysis.attribution import AttributionSettings, attribute_item

    chosen = copy.copy(item)
    chosen.rows = [item.rows[r] for r in rows]
    settings = AttributionSettings(method="ig", steps=STEPS, batch_size=BATCH, tolerance=tolerance)
    return attribute_item(model, chosen, settings)


def captum_ig(model, item, modules, row: int):
    """(C,) Captum's attributions of one output token: source columns, then prefix columns."""
    import numpy as np
    import torch
    from captum.attr import LayerIntegratedGradients

    position, token = item.rows[row].position, item.rows[row].token_id

    def forward(src, tgt):
        return model(src, tgt)[:, position].log_softmax(-1)[:, token]

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Multiple layers provided")
        lig = LayerIntegratedGradients(forward, modules)
    baselines = tuple(torch.full_like(t, item.pad_ids[0]) for t in item.inputs)
    attributions = lig.attribute(tuple(item.inputs), baselines=baselines, n_steps=STEPS,
                                 internal_batch_size=BATCH)
    return np.concatenate([a[0].sum(-1).detach().numpy() for a in attributions])


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def paired(rounds: int, ours, peer) -> dict:
    """Alternating which side goes first; each side's times and the values of the first round."""
    times: dict[str, list[float]] = {"ours": [], "peer": []}
    values: dict = {}
    for r in range(rounds):
        order = [("ours", ours), ("peer", peer)]
        for side, fn in order if r % 2 == 0 else order[::-1]:
            seconds, value = timed(fn)
            times[side].append(seconds)
            values.setdefault(side, value)
        print(f"  round {r + 1}: ours {times['ours'][-1]:.2f} s, peer {times['peer'][-1]:.2f} s, "
              f"load {_load()}", file=sys.stderr, flush=True)
    ratios = [o / p for o, p in zip(times["ours"], times["peer"])]
    return {"ours_s": times["ours"], "peer_s": times["peer"], "ratio_median": statistics.median(ratios),
            "ours_median_s": statistics.median(times["ours"]), "peer_median_s": statistics.median(times["peer"]),
            "values": values}


def row_ig(kind: str, rounds: int) -> dict:
    import numpy as np

    model, item, modules = marian()
    last = LENGTH - 1
    if kind == "ig-all":
        out = paired(rounds, lambda: ours_ig(model, item, list(range(LENGTH))),
                     lambda: np.stack([captum_ig(model, item, modules, r) for r in range(LENGTH)]))
        ours, peer = out.pop("values").values()
        out["max_abs_difference"] = float(np.abs(np.nan_to_num(ours.scores) - peer).max())
        out["max_abs_attribution"] = float(np.abs(peer).max())
        return out
    tolerance = 0.01 if kind == "ig-tol" else None
    out = paired(rounds, lambda: ours_ig(model, item, [last], tolerance),
                 lambda: captum_ig(model, item, modules, last))
    ours, peer = out.pop("values").values()
    out["max_abs_difference"] = float(np.abs(np.nan_to_num(ours.scores[0]) - peer).max())
    out["max_abs_attribution"] = float(np.abs(peer).max())
    out["ours_steps"], out["ours_relative_gap"] = int(ours.steps), float(ours.relative_gap[0])
    if kind == "ig-tol":
        seconds, every = timed(lambda: ours_ig(model, item, list(range(LENGTH)), 0.01))
        relative = every.relative_gap
        out["all_30"] = {"seconds": seconds, "share_within_1pct": float((relative <= 0.01).mean()),
                         "steps": every.row_steps.tolist(), "max_relative_gap": float(relative.max())}
    return out


def gpt2_workspace():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from explorer.data.tokenizers import WordTokenizer
    from explorer.hf.adapter import HFCausalLM, HFModelConfig
    from explorer.workspace import Workspace

    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config()).eval()  # 12 layers x 12 heads, d 768, 50,257 tokens
    model = HFCausalLM(hf, HFModelConfig("hf-causal-lm", "gpt2", 50257, 1024, 1024, 50256, 50256, 50256))
    words = "the quick brown fox jumps over the lazy dog while a cat sleeps on the warm mat by the door".split()
    return Workspace(model, WordTokenizer.train([" ".join(words)]), None), " ".join(words[:21])


def hook_loop(hf, item):
    """The TransformerLens user's loop: per head one forward pass, a pre-hook on c_proj zeroing
    the head's slice of the concatenated head outputs. (L, H) drop in the summed log p."""
    import numpy as np
    import torch

    ids = item.inputs[0]
    positions = [row.position for row in item.rows]
    tokens = [row.token_id for row in item.rows]
    heads, width = hf.config.n_head, hf.config.n_embd // hf.config.n_head

    def summed() -> float:
        logits = hf(ids).logits  # (1, T, V)
        return float(logits[0, positions].log_softmax(-1)[range(len(tokens)), tokens].sum())

    with torch.no_grad():
        clean = summed()
        drop = np.zeros((hf.config.n_layer, heads))
        for layer, block in enumerate(hf.transformer.h):
            for head in range(heads):
                def zero(module, args, head=head):
                    x = args[0].clone()
                    x[..., head * width:(head + 1) * width] = 0.0
                    return (x,)

                handle = block.attn.c_proj.register_forward_pre_hook(zero)
                try:
                    drop[layer, head] = clean - summed()
                finally:
                    handle.remove()
    return drop


def row_heads(rounds: int) -> dict:
    import numpy as np

    from explorer.analysis.attribution_input import attribution_input
    from explorer.analysis.interventions import head_importance

    workspace, text = gpt2_workspace()
    item = attribution_input(workspace, text)
    out = paired(rounds, lambda: head_importance(workspace, text).drop,
                 lambda: hook_loop(workspace.model.hf, item))
    ours, peer = out.pop("values").values()
    out["max_abs_difference"] = float(np.abs(ours - peer).max())
    out["max_abs_drop"] = float(np.abs(peer).max())
    out["tokens"] = len(item.inputs[0][0])
    return out


def gui_cpu_and_wall(result: dict, steps: int) -> tuple[float, float]:
    """(GUI thread CPU s, wall s) of one bench_gui.app_run."""
    cpu = result["gui_cpu_ms_per_100_steps"] * steps / 100 / 1000
    return cpu, cpu / result["gui_cpu_share"]


def row_gui(rounds: int, threads: int, steps: int, long_steps: int) -> dict:
    """Per round: headless and in-app runs of `steps` (alternating which goes first), and, with
    long_steps, an in-app run of `long_steps`: the two in-app runs' difference is the GUI thread's
    share while training goes on (a run's start and finish, paid once, left out)."""
    sys.path.insert(0, os.path.dirname(__file__))
    import bench_gui

    bench_gui.THREADS[0] = threads
    bench_gui.TIMER_MS[0] = 1000.0  # the lateness timer: one wake a second, next to nothing
    bench_gui.app_run(100)  # the first window's one-time costs out of the rounds
    headless, app, share, steady, fixed = [], [], [], [], []
    for r in range(rounds):
        if r % 2 == 0:
            headless.append(bench_gui.headless_tokens_per_s(steps))
            result = bench_gui.app_run(steps)
        else:
            result = bench_gui.app_run(steps)
            headless.append(bench_gui.headless_tokens_per_s(steps))
        app.append(result["tokens_per_s"])
        share.append(result["gui_cpu_share"])
        line = (f"  round {r + 1}: app {app[-1]:.0f} tok/s, headless {headless[-1]:.0f} tok/s, "
                f"GUI thread {100 * share[-1]:.1f}% of a core")
        if long_steps:
            (cpu, wall), (long_cpu, long_wall) = (gui_cpu_and_wall(result, steps),
                                                  gui_cpu_and_wall(bench_gui.app_run(long_steps), long_steps))
            steady.append((long_cpu - cpu) / (long_wall - wall))
            fixed.append(cpu - steady[-1] * wall)
            line += f", {100 * steady[-1]:.1f}% while training goes on, {fixed[-1]:.2f} s once a run"
        print(f"{line}, load {_load()}", file=sys.stderr, flush=True)
    ratios = [a / h for a, h in zip(app, headless)]
    out = {"app_tokens_per_s": app, "headless_tokens_per_s": headless, "ratio_median": statistics.median(ratios),
           "gui_cpu_share": share, "gui_cpu_share_median": statistics.median(share)}
    if long_steps:
        out.update(steady_gui_cpu_share=steady, steady_gui_cpu_share_median=statistics.median(steady),
                   once_a_run_gui_cpu_s=fixed, once_a_run_gui_cpu_s_median=statistics.median(fixed))
    return out


def rss_child(kind: str, side: str) -> dict:
    """Peak RSS of one call of one side of an IG row, in this process alone."""
    model, item, modules = marian()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    last = LENGTH - 1
    if side == "ours":
        ours_ig(model, item, list(range(LENGTH)) if kind == "ig-all" else [last],
                0.01 if kind == "ig-tol" else None)
    else:
        for r in range(LENGTH) if kind == "ig-all" else [last]:
            captum_ig(model, item, modules, r)
    return {"model_rss_mb": before, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child(args) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    if args.rss:
        return rss_child(args.child, args.rss)
    if args.child == "heads":
        return row_heads(args.rounds)
    if args.child == "gui":
        return row_gui(args.rounds, args.threads, args.gui_steps, args.gui_long_steps)
    return row_ig(args.child, args.rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gui-steps", type=int, default=600, help="training steps of each gui round")
    parser.add_argument("--gui-long-steps", type=int, default=2400,
                        help="steps of each gui round's longer in-app run (0: none)")
    parser.add_argument("--no-rss", action="store_true", help="skip the IG rows' peak-RSS children")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rss", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    base = [sys.executable, __file__, "--threads", str(args.threads), "--rounds", str(args.rounds),
            "--gui-steps", str(args.gui_steps), "--gui-long-steps", str(args.gui_long_steps)]
    print(f"threads {args.threads}, rounds {args.rounds}", flush=True)
    for row in args.rows.split(","):
        load = _load()
        done = subprocess.run(base + ["--child", row], stdout=subprocess.PIPE, text=True, env=env, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        if row.startswith("ig") and not args.no_rss:
            for side in ("ours", "peer"):
                rss = subprocess.run(base + ["--child", row, "--rss", side], stdout=subprocess.PIPE,
                                     text=True, env=env, check=True)
                result[f"{side}_rss"] = json.loads(rss.stdout.strip().splitlines()[-1])
        print(json.dumps({"row": row, "load_before": load, "load_after": _load(), **result}), flush=True)


if __name__ == "__main__":
    main()
