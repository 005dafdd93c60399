"""`explorer train` and `explorer decode` with 1 and 2 torch threads, side by side, on a machine with
other work on its cores; and where `explorer decode` spends its start-up.

    python benchmarks/bench_cli_threads.py [--rounds 3] [--hog 1] [--startup-only --before DIR]

Each round runs both thread counts back to back (the order alternates), so the machine's drift
falls on both alike; medians are reported. --hog N keeps N busy Python loops running meanwhile
(`python -c 'while 1: pass'`), as a shared machine would. Train: a small Transformer on `reverse`,
60 steps, tokens/s from its summary line. Decode: greedy, 64 translate-toy sources, on the shipped
demo checkpoint. Start-up: one sentence, wall and CPU seconds of the whole process, and the parts
measured in one process (import torch, open the checkpoint, decode). --before DIR (an older copy of
the repository, e.g. from `git archive`) times its start-up in pairs with this one's.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "resources" / "demo" / "translate-toy-transformer"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def explorer(*args: str, root: Path = ROOT) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stderr of one `explorer` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "explorer", *args], capture_output=True,
                            text=True, env={**ENV, "PYTHONPATH": str(root)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode:
        sys.exit(f"explorer {' '.join(args)} failed: {result.stderr[-500:]}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, result.stderr


def train_tokens_per_s(threads: int, out: Path) -> float:
    _, _, stderr = explorer("train", "--task", "reverse", "--arch", "transformer", "--d-model",
                            "64", "--steps", "60", "--eval-every", "0", "--device", "cpu",
                            "--threads", str(threads), "--out", str(out))
    return float(re.search(r"\(([\d,]+) tok/s\)", stderr).group(1).replace(",", ""))


def decode_seconds(threads: int, sources: Path) -> float:
    wall, _, _ = explorer("decode", "--checkpoint", str(DEMO), "--threads", str(threads),
                          "--input", str(sources))
    return wall


def startup_parts() -> str:
    """import torch / open the checkpoint / decode one sentence, CPU seconds, in one process."""
    code = f"""
import time
t = time.process_time(); import torch; parts = [time.process_time() - t]
from explorer.cli import build_parser
from explorer.commands import decode
args = build_parser().parse_args(["decode", "--checkpoint", {str(DEMO)!r}, "the cat sees the dog"])
t = time.process_time(); workspace = decode.load_workspace(args.checkpoint)
parts.append(time.process_time() - t)
torch.set_num_threads(1)
t = time.process_time(); list(decode._decode_all(workspace, ["the cat sees the dog"], args))
parts.append(time.process_time() - t)
print(" ".join(f"{{p:.2f}}" for p in parts))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV)
    return result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hog", type=int, default=1, help="busy loops running meanwhile")
    parser.add_argument("--startup-only", action="store_true", help="skip the thread pairs")
    parser.add_argument("--before", type=Path, help="an older copy of the repository")
    args = parser.parse_args()
    if args.startup_only:
        return compare_startup(args.rounds, args.before)
    from explorer.data.tasks import make_task

    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.hog)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sources = Path(tmp) / "sources.txt"
            pairs = make_task("translate-toy", n_train=0, n_val=64, n_test=0).val
            sources.write_text("\n".join(source for source, _ in pairs) + "\n")
            train = {1: [], 2: []}
            decode = {1: [], 2: []}
            for round_ in range(args.rounds):
                for threads in ((1, 2) if round_ % 2 == 0 else (2, 1)):
                    train[threads].append(train_tokens_per_s(threads, Path(tmp) / "ck"))
                    decode[threads].append(decode_seconds(threads, sources))
                print(f"round {round_ + 1}: train tok/s {train[1][-1]:,.0f} (1) "
                      f"{train[2][-1]:,.0f} (2); decode s {decode[1][-1]:.1f} (1) "
                      f"{decode[2][-1]:.1f} (2); load {os.getloadavg()[0]:.1f}", flush=True)
            startups = [explorer("decode", "--checkpoint", str(DEMO), "the cat sees the dog")[:2]
                        for _ in range(args.rounds)]
            parts = startup_parts()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    median = statistics.median
    print()
    print(f"| {args.hog} busy loop(s), {args.rounds} rounds | --threads 1 | --threads 2 | 2 / 1 |")
    print("|---|---:|---:|---:|")
    t1, t2 = median(train[1]), median(train[2])
    print(f"| train tokens/s (median) | {t1:,.0f} | {t2:,.0f} | {t2 / t1:.2f} |")
    d1, d2 = median(decode[1]), median(decode[2])
    print(f"| decode 64 sources, s (median) | {d1:.1f} | {d2:.1f} | {d2 / d1:.2f} |")
    print()
    print(f"decode start-up, one sentence: wall {median(w for w, _ in startups):.2f} s, "
          f"CPU {median(c for _, c in startups):.2f} s (medians); "
          f"CPU s of import torch / open checkpoint / decode: {parts}")


def compare_startup(rounds: int, before: Path | None) -> None:
    """Start-up of one sentence's decode, this copy against `before`, in pairs."""
    copies = {"this": ROOT, **({"before": before.resolve()} if before else {})}
    times = {name: [] for name in copies}
    for _ in range(rounds):
        for name, root in copies.items():
            times[name].append(explorer("decode", "--checkpoint", str(DEMO),
                                        "the cat sees the dog", root=root)[:2])
    for name, runs in times.items():
        print(f"{name}: wall {statistics.median(w for w, _ in runs):.2f} s, CPU "
              f"{statistics.median(c for _, c in runs):.2f} s (medians of {rounds})")
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
