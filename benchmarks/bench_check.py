"""`explorer check` on a GPT-2-small-size user model (issue 33: under 5 s on 2 cores).

    python benchmarks/bench_check.py [--rounds 5]

The model is models/char_gpt.py's nanoGPT-style GPT at GPT-2 small's size (12 layers, 12 heads,
768 wide, 1,024 positions, a 50,257-token vocabulary list: 124 M parameters), written to a
temporary file with its build function. Each round runs `explorer check --model FILE.py:build` as
a new process, as a user types it: wall seconds from start to exit, Python's start-up, torch's
import and the user's build() (its weights' initialisation) included. The median is reported
beside the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import resource
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = '''

def build_gpt2_small():
    torch.manual_seed(0)
    vocab = ["<|endoftext|>"] + [f"t{i}" for i in range(50256)]
    config = GPTConfig(block_size=1024, vocab_size=len(vocab), n_layer=12, n_head=12, n_embd=768)
    return GPT(config), vocab, explorer.Adapter(max_len=config.block_size)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description="explorer check on a GPT-2-small-size user model")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-check-"))
    model_file = folder / "gpt2_small.py"
    model_file.write_text((ROOT / "models" / "char_gpt.py").read_text() + BUILD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("OMP_NUM_THREADS", None)  # the command's own choice of threads, as a user runs it
    command = [sys.executable, "-m", "explorer", "check", "--model",
               f"{model_file}:build_gpt2_small"]
    seconds, cpu, loads = [], [], []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        run = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        seconds.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if run.returncode not in (0, 1):
            raise SystemExit(run.stderr)
    print(run.stdout.splitlines()[1])  # the model line: its size
    print(f"explorer check, GPT-2 small size, {args.rounds} runs: wall median "
          f"{statistics.median(seconds):.2f} s (each {', '.join(f'{s:.2f}' for s in seconds)}), "
          f"CPU median {statistics.median(cpu):.2f} s (each {', '.join(f'{c:.2f}' for c in cpu)}); "
          f"{os.cpu_count()} cores, load {statistics.median(loads):.2f}; wall "
          f"{'PASS' if statistics.median(seconds) < 5 else 'FAIL'}, CPU "
          f"{'PASS' if statistics.median(cpu) < 5 else 'FAIL'}: must be < 5 s")


if __name__ == "__main__":
    main()
