"""What does tracing cost? GPT forward time: trace=False vs trace=True vs a fused reference.

The reference is the same model (same weights) with its blocks replaced by
torch.nn.TransformerEncoderLayer, i.e. torch's own fused attention. trace=False should cost
nothing over it (ratio ~1.0); trace=True writes the attention out and keeps every map.

    python benchmarks/bench_trace_cost.py [--batch 4] [--length 256] [--preset small] [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn

from seqmodels import build_model, make_config


class FusedReference(nn.Module):
    """The GPT's embedding and head around torch's TransformerEncoderLayer blocks with its weights."""

    def __init__(self, gpt):
        super().__init__()
        config = gpt.config
        self.gpt = gpt
        self.layers = nn.ModuleList()
        for block in gpt.layers:
            layer = nn.TransformerEncoderLayer(
                config.d_model, config.num_heads, config.d_ff, config.dropout, "gelu",
                batch_first=True, norm_first=config.norm_first,
            )
            layer.load_state_dict(block.state_dict())
            self.layers.append(layer)

    def forward(self, tokens):
        length = tokens.size(1)
        causal = torch.ones(length, length, dtype=torch.bool, device=tokens.device).triu(1)
        x = self.gpt.embed(tokens)  # (B, T, D)
        for layer in self.layers:
            x = layer(x, src_mask=causal, is_causal=True)
        return self.gpt.lm_head(self.gpt.final_norm(x))  # (B, T, V)


def time_interleaved(fns: dict, repeats: int) -> dict[str, list[float]]:
    """Milliseconds per call of each fn, the variants taking turns so machine load hits all alike."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(1000 * (time.perf_counter() - start))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    config = make_config("gpt", args.preset, vocab_size=65, max_len=max(256, args.length), dropout=0.0)
    gpt = build_model(config).eval()
    reference = FusedReference(gpt).eval()
    tokens = torch.randint(0, 65, (args.batch, args.length))

    with torch.no_grad():
        difference = (reference(tokens) - gpt(tokens)).abs().max().item()
    print(f"GPT {args.preset}: d_model={config.d_model} layers={config.num_layers} heads={config.num_heads}, "
          f"batch {args.batch} x {args.length} tokens, {torch.get_num_threads()} threads")
    print(f"max |reference - ours| = {difference:.2e}")
    maps = config.num_layers * args.batch * config.num_heads * args.length**2  # (B, H, T, T) per layer
    print(f"trace=True keeps {maps * 4 / 2**20:.1f} MiB of attention maps\n")

    def inference(fn):
        def run():
            with torch.no_grad():
                fn()
        return run

    def training(fn):
        def run():
            out = fn()
            logits = out[0] if isinstance(out, tuple) else out
            logits.float().square().mean().backward()
        return run

    variants = {
        "reference (torch fused)": lambda: reference(tokens),
        "ours, trace=False": lambda: gpt(tokens),
        "ours, trace=True": lambda: gpt(tokens, trace=True),
    }
    print(f"{'mode':<22}{'variant':<26}{'best ms':>9}{'median ms':>11}{'x reference (best)':>20}")
    for mode, wrap in (("forward (no_grad)", inference), ("forward + backward", training)):
        times = time_interleaved({name: wrap(fn) for name, fn in variants.items()}, args.repeats)
        baseline = min(times["reference (torch fused)"])
        for name, samples in times.items():
            best = min(samples)
            print(f"{mode:<22}{name:<26}{best:>9.2f}{statistics.median(samples):>11.2f}{best / baseline:>20.2f}")


if __name__ == "__main__":
    main()
