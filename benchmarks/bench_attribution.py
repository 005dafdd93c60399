"""Attribution and head-importance timings at the issue's sizes (issue 23), with peak RSS.

* integrated gradients, 50 steps, on a Marian-size translation model (opus-mt: d_model 512, 6 + 6
  layers, 8 heads, FFN 2048, 58,101 tokens; random weights, the cost does not depend on them) with
  a 30-token source and a 30-token target: the last output token, the last 5, and all 30;
  at internal batch sizes 8, 16 and 50 (memory grows with the batch, time barely);
* the layer × head importance map of a GPT-2-small-size model (12 layers × 12 heads, d 768,
  50,257 tokens) on a 20-token probe;
* attention flow of one stack of 12 layers × 12 heads over 20 tokens and of the demo's size (2
  layers, 8 tokens): random attention rows (the max-flows' cost depends on the graph's size only).

Each case runs in its own process (peak RSS is the process's ru_maxrss, model included), with
torch limited to the given threads; the median of --repeats runs is reported.

    python benchmarks/bench_attribution.py --threads 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = {
    "ig-one-b8": ("ig", 1, 8), "ig-one-b16": ("ig", 1, 16), "ig-one-b50": ("ig", 1, 50),
    "ig-5-b50": ("ig", 5, 50), "ig-all-b16": ("ig", 30, 16), "ig-all-b50": ("ig", 30, 50),
    "heads-12x12": ("heads", 0, 0),
    "flow-12x20": ("flow", 12, 20), "flow-2x8": ("flow", 2, 8),
}


def _marian():
    import torch
    from transformers import MarianConfig, MarianMTModel

    from explorer.hf.adapter import HFModelConfig, HFSeq2Seq

    torch.manual_seed(0)
    config = MarianConfig(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
                          encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                          decoder_ffn_dim=2048, max_position_embeddings=512, pad_token_id=58100,
                          eos_token_id=0, decoder_start_token_id=58100)
    hf = MarianMTModel(config).eval()
    return HFSeq2Seq(hf, HFModelConfig("hf-seq2seq", "marian", 58101, 512, 512, 58100, 0, 58100))


def run_ig(rows: int, batch: int) -> dict:
    import torch

    from explorer.analysis.attribution import AttributionSettings, attribute_item
    from explorer.analysis.attribution_input import AttributionInput, Row, Side, embedding_modules

    model = _marian()
    generator = torch.Generator().manual_seed(1)
    src = torch.randint(5, 58000, (1, 30), generator=generator)
    tgt = torch.randint(5, 58000, (1, 30), generator=generator)
    sides = [Side(name, index, modules, [str(i) for i in range(30)], causal=name == "prefix")
             for name, index, modules in embedding_modules(model)]
    out = torch.randint(5, 58000, (30,), generator=generator).tolist()
    all_rows = [Row(p, out[p], str(out[p])) for p in range(30)]
    item = AttributionInput((src, tgt), sides, all_rows[-rows:],
                            [58100, 58100], [1, 1])
    settings = AttributionSettings(method="ig", steps=50, batch_size=batch)
    start, cpu = time.perf_counter(), time.process_time()
    result = attribute_item(model, item, settings)
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
            "max_relative_gap": float(result.relative_gap.max())}


def run_heads() -> dict:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from explorer.analysis.interventions import head_importance
    from explorer.data.tokenizers import WordTokenizer
    from explorer.hf.adapter import HFCausalLM, HFModelConfig
    from explorer.workspace import Workspace

    torch.manual_seed(0)
    hf = GPT2LMHeadModel(GPT2Config(n_layer=12, n_head=12, n_embd=768, vocab_size=50257)).eval()
    model = HFCausalLM(hf, HFModelConfig("hf-causal-lm", "gpt2", 50257, 1024, 1024, 50256, 50256, 50256))
    words = "the quick brown fox jumps over the lazy dog while a cat sleeps on the warm mat by the door".split()
    tokenizer = WordTokenizer.train([" ".join(words)])
    workspace = Workspace(model, tokenizer, None)
    start, cpu = time.perf_counter(), time.process_time()
    result = head_importance(workspace, " ".join(words[:21]))
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
            "shape": list(result.drop.shape)}


def run_flow(layers: int, tokens: int) -> dict:
    import numpy as np

    from explorer.analysis.attention_flow import flow_stack

    rng = np.random.default_rng(0)
    weights = [rng.dirichlet(np.ones(tokens), size=(12, tokens)) for _ in range(layers)]  # (H, T, T)
    start, cpu = time.perf_counter(), time.process_time()
    flow = flow_stack(weights)
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
            "shape": list(flow.shape)}


def child(case: str, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    kind, rows, batch = CASES[case]
    out = {"heads": run_heads, "flow": lambda: run_flow(rows, batch)}.get(kind, lambda: run_ig(rows, batch))()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def _load() -> list[str]:
    with open("/proc/loadavg") as handle:
        return handle.read().split()[:3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.threads)
        return
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    print(f"load average before: {_load()}, threads {args.threads}")
    for case in args.cases.split(","):
        runs = []
        for _ in range(args.repeats):
            done = subprocess.run([sys.executable, __file__, "--child", case, "--threads", str(args.threads)],
                                  capture_output=True, text=True, env=env, check=True)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        seconds = statistics.median(r["seconds"] for r in runs)
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        extra = {k: v for k, v in runs[0].items() if k not in ("seconds", "cpu_s", "peak_rss_mb")}
        each = ", ".join(f"{r['seconds']:.2f}" for r in runs)
        print(f"{case:12s} median {seconds:7.2f} s wall, {cpu:7.2f} s CPU  (runs {each})  "
              f"peak RSS {rss:7.0f} MB  {extra}",
              flush=True)
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
