"""What does the activation layer cost when nothing is read? (issue 21)

Two paired comparisons, forward passes under torch.no_grad, eval mode, one thread:

1. hook sites idle vs before: the same weights in the models as they are now (MultiHeadAttention,
   Alignment and RNN carry an `activation_hook` attribute that is None) and in the models of the
   commit before the activation layer (`--before`, default 65a1809), exported into a temporary
   package `seqmodels_before`;
2. `run_with(model, inputs)` asking for nothing vs `model(*inputs)`.

Each round times `--calls` forward passes of A then B (the order alternating between rounds);
the result is the median over rounds of B / A, so machine load that drifts affects both alike.

    python benchmarks/bench_hook_cost.py [--rounds 30] [--calls 5] [--before 65a1809]
    python benchmarks/bench_hook_cost.py --export-before build/before   # for a machine without git
    python benchmarks/bench_hook_cost.py --before-dir build/before      # ... and then there
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import torch

MODELS = {  # name -> (family, preset overrides, input shapes)
    "gpt small": ("gpt", dict(d_model=128, num_heads=4, num_layers=4, d_ff=512), [(8, 128)]),
    "transformer tiny": ("transformer", dict(d_model=64, num_heads=4, num_layers=2, d_ff=128), [(16, 40), (16, 40)]),
    "rnn-lm lstm (fused)": ("rnn-lm", dict(cell="lstm", embed_dim=64, hidden_size=128), [(16, 64)]),
    "rnn-lm ugrnn (steps)": ("rnn-lm", dict(cell="ugrnn", embed_dim=64, hidden_size=128), [(16, 64)]),
    "seq2seq additive gru": ("seq2seq", dict(cell="gru", attention="additive", embed_dim=64, hidden_size=128),
                             [(16, 20), (16, 20)]),
}


def export_before(commit: str, folder: pathlib.Path | None = None) -> pathlib.Path:
    """The seqmodels package of `commit` as `seqmodels_before` in `folder` (default: a temporary one)."""
    root = (folder or pathlib.Path(tempfile.mkdtemp())) / "seqmodels_before"
    root.mkdir(parents=True, exist_ok=True)
    files = subprocess.run(["git", "ls-tree", "--name-only", commit, "seqmodels/"], check=True,
                           capture_output=True, text=True).stdout.split()
    for name in files:
        if name.endswith(".py"):
            text = subprocess.run(["git", "show", f"{commit}:{name}"], check=True, capture_output=True,
                                  text=True).stdout
            text = text.replace("from seqmodels", "from seqmodels_before").replace("import seqmodels",
                                                                                   "import seqmodels_before")
            text = text.replace('"seqmodels"', '"seqmodels_before"').replace('f"seqmodels.', 'f"seqmodels_before.')
            (root / pathlib.Path(name).name).write_text(text)
    return root.parent


def paired(a, b, rounds: int, calls: int) -> tuple[float, float, float]:
    """(median ms of a, median ms of b, median of b/a per round)."""
    times_a, times_b, ratios = [], [], []
    for r in range(rounds):
        pair = []
        for fn in ((a, b) if r % 2 == 0 else (b, a)):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            pair.append((time.perf_counter() - start) / calls)
        ta, tb = pair if r % 2 == 0 else pair[::-1]
        times_a.append(ta)
        times_b.append(tb)
        ratios.append(tb / ta)
    return statistics.median(times_a) * 1e3, statistics.median(times_b) * 1e3, statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--before", default="65a1809")
    parser.add_argument("--before-dir", type=pathlib.Path, help="a folder --export-before wrote")
    parser.add_argument("--export-before", type=pathlib.Path, help="only export the old package there")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.export_before:
        export_before(args.before, args.export_before)
        return
    torch.set_num_threads(1)
    sys.path.insert(0, str(args.before_dir.resolve() if args.before_dir else export_before(args.before)))
    before = importlib.import_module("seqmodels_before")
    import seqmodels

    from explorer.analysis.activations import run_with

    print(f"load {open('/proc/loadavg').read().split()[:3]}, torch {torch.__version__}, one thread, "
          f"{args.rounds} rounds x {args.calls} calls, device {args.device}")
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)

    def timed(fn):
        return lambda: (fn(), sync())

    print("| model | before (ms) | idle sites (ms) | idle / before | same code, another copy | run_with nothing / bare |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, (family, overrides, shapes) in MODELS.items():
        vocab = dict(vocab_size=500, src_vocab_size=500) if family in ("transformer", "seq2seq") else dict(vocab_size=500)
        torch.manual_seed(0)
        now = seqmodels.build_model(seqmodels.make_config(family, "tiny", **vocab, **overrides)).eval()
        old = before.build_model(before.make_config(family, "tiny", **vocab, **overrides)).eval()
        old.load_state_dict(now.state_dict())
        twin = seqmodels.build_model(now.config).eval()  # the noise floor: same code, another instance
        twin.load_state_dict(now.state_dict())
        now, old, twin = now.to(args.device), old.to(args.device), twin.to(args.device)
        inputs = tuple(torch.randint(5, 500, shape, device=args.device) for shape in shapes)

        with torch.no_grad():
            assert torch.equal(old(*inputs), now(*inputs))
            t_old, t_now, idle = paired(timed(lambda: old(*inputs)), timed(lambda: now(*inputs)),
                                        args.rounds, args.calls)
            _, _, same = paired(timed(lambda: twin(*inputs)), timed(lambda: now(*inputs)), args.rounds, args.calls)
            _, _, nothing = paired(timed(lambda: now(*inputs)), timed(lambda: run_with(now, inputs)),
                                   args.rounds, args.calls)
        print(f"| {label} | {t_old:.2f} | {t_now:.2f} | {idle:.3f} | {same:.3f} | {nothing:.3f} |")
    # the hook sites alone, where they weigh most: one small module call (~tens of microseconds)
    modules = {
        "MultiHeadAttention (1, 4, 16)": (lambda pkg: pkg.attention.MultiHeadAttention(16, 2), (1, 4, 16),
                                          lambda m, x: m(x, x, x)),
        "RNN ugrnn steps (1, 4, 16)": (lambda pkg: pkg.recurrent.RNN("ugrnn", 16, 16, batch_first=True),
                                       (1, 4, 16), lambda m, x: m(x)),
    }
    importlib.import_module("seqmodels_before.attention")
    importlib.import_module("seqmodels_before.recurrent")
    import seqmodels.attention
    import seqmodels.recurrent

    for label, (build, shape, call) in modules.items():
        torch.manual_seed(0)
        now = build(seqmodels).eval().to(args.device)
        old = build(before).eval().to(args.device)
        old.load_state_dict(now.state_dict())
        x = torch.randn(shape, device=args.device)
        with torch.no_grad():
            t_old, t_now, idle = paired(timed(lambda: call(old, x)), timed(lambda: call(now, x)),
                                        args.rounds, args.calls * 100)
        print(f"| {label} | {t_old * 1e3:.1f} us | {t_now * 1e3:.1f} us | {idle:.3f} | | |")
    print(f"load at the end {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    os.chdir(pathlib.Path(__file__).resolve().parent.parent)
    main()
