"""`explorer train` and `explorer decode` with 1 and 2 torch threads and with no --threads (the
default: explorer.runtime.choose_threads), side by side, on a machine with or without other work
on its cores; and where `explorer decode` spends its start-up.

    python benchmarks/bench_cli_threads.py [--rounds 3] [--hog 1] [--startup-only --before DIR]

Each round runs the three settings back to back (the order rotates), so the machine's drift
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


SETTINGS = ("1", "2", "default")  # --threads 1, --threads 2, no --threads


def thread_flag(setting: str) -> list[str]:
    return [] if setting == "default" else ["--threads", setting]


def train_tokens_per_s(setting: str, out: Path) -> tuple[float, str]:
    """tokens/s, and the default's note (the thread count it chose) if it printed one."""
    _, _, stderr = explorer("train", "--task", "reverse", "--arch", "transformer", "--d-model",
                            "64", "--steps", "60", "--eval-every", "0", "--device", "cpu",
                            *thread_flag(setting), "--out", str(out))
    note = re.search(r"using (\d+) CPU thread", stderr)
    speed = float(re.search(r"\(([\d,]+) tok/s\)", stderr).group(1).replace(",", ""))
    return speed, note.group(1) if note else "all"


def decode_seconds(setting: str, sources: Path) -> float:
    wall, _, _ = explorer("decode", "--checkpoint", str(DEMO), *thread_flag(setting),
                          "--input", str(sources))
    return wall


def startup_parts() -> str:
    """import torch / open the checkpoint / decode one sentence, CPU seconds, in one process."""
    code = f"""
import time
t = time.process_time(); import torch; parts = [time.process_time() - t]
from explorer.cli import build_parser
from explorer.commands import decode, model_args
args = build_parser().parse_args(["decode", "--checkpoint", {str(DEMO)!r}, "the cat sees the dog"])
t = time.process_time(); workspace = model_args.load_workspace(args.checkpoint)
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
            train = {setting: [] for setting in SETTINGS}
            decode = {setting: [] for setting in SETTINGS}
            chosen = []  # what the default chose each round
            for round_ in range(args.rounds):
                order = SETTINGS[round_ % 3:] + SETTINGS[:round_ % 3]
                for setting in order:
                    out = Path(tempfile.mkdtemp(dir=tmp))  # a fresh run folder each time
                    speed, note = train_tokens_per_s(setting, out / "ck")
                    train[setting].append(speed)
                    if setting == "default":
                        chosen.append(note)
                    decode[setting].append(decode_seconds(setting, sources))
                print(f"round {round_ + 1}: train tok/s " + " ".join(
                    f"{train[s][-1]:,.0f} ({s})" for s in SETTINGS) + "; decode s " + " ".join(
                    f"{decode[s][-1]:.1f} ({s})" for s in SETTINGS)
                    + f"; default chose {chosen[-1]} thread(s); load {os.getloadavg()[0]:.1f}",
                    flush=True)
            startups = [explorer("decode", "--checkpoint", str(DEMO), "the cat sees the dog")[:2]
                        for _ in range(args.rounds)]
            parts = startup_parts()
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    median = statistics.median
    print()
    print(f"| {args.hog} busy loop(s), {args.rounds} rounds | --threads 1 | --threads 2 | "
          "default | default / best fixed |")
    print("|---|---:|---:|---:|---:|")
    t = {s: median(train[s]) for s in SETTINGS}
    print(f"| train tokens/s (median) | {t['1']:,.0f} | {t['2']:,.0f} | {t['default']:,.0f} | "
          f"{t['default'] / max(t['1'], t['2']):.2f} |")
    d = {s: median(decode[s]) for s in SETTINGS}
    print(f"| decode 64 sources, s (median) | {d['1']:.1f} | {d['2']:.1f} | {d['default']:.1f} | "
          f"{min(d['1'], d['2']) / d['default']:.2f} |")
    print(f"default's choice per round: {', '.join(chosen)} thread(s)")
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
