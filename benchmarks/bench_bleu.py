"""`explorer bleu` against sacreBLEU's own command line on 10,000 sentence pairs.

References are Multi30k training sentences (English); hypotheses are the same sentences perturbed
(words dropped, swapped, replaced), so BLEU lands in a realistic range. Both commands run as fresh
processes, alternating, so that disk cache and machine load affect both alike. Target: explorer
within 1.2x of sacreBLEU's time, and the same score.

    python benchmarks/bench_bleu.py [--pairs 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path("/work/shared/data/multi30k/train.en.gz")


def perturb(rng: random.Random, sentence: str, vocabulary: list[str]) -> str:
    words = sentence.split()
    out = []
    for word in words:
        roll = rng.random()
        if roll < 0.08:
            continue  # dropped
        out.append(rng.choice(vocabulary) if roll < 0.2 else word)
    if len(out) > 3 and rng.random() < 0.3:  # a local reordering
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def make_files(folder: Path, pairs: int, seed: int = 0) -> tuple[Path, Path]:
    with gzip.open(DATA, "rt", encoding="utf-8") as handle:
        references = [line.strip() for line in handle if line.strip()][:pairs]
    vocabulary = sorted({w for line in references for w in line.split()})
    rng = random.Random(seed)
    hypotheses = [perturb(rng, line, vocabulary) for line in references]
    hyp_path, ref_path = folder / "hyp.txt", folder / "ref.txt"
    hyp_path.write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    ref_path.write_text("\n".join(references) + "\n", encoding="utf-8")
    return hyp_path, ref_path


def timed(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, stdout). CPU time is steadier on a busy machine."""
    def children_cpu() -> float:  # cumulative over all waited-for children
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    cpu_before, start = children_cpu(), time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = process.communicate()
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu_before
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} failed: {err.strip()}")
    return wall, cpu, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        hyp_path, ref_path = make_files(Path(tmp), args.pairs)
        ours_cmd = [sys.executable, "-m", "explorer", "bleu", str(hyp_path), str(ref_path),
                    "--json"]
        theirs_cmd = [sys.executable, "-m", "sacrebleu", str(ref_path), "-i", str(hyp_path),
                      "-m", "bleu", "-w", "4"]
        outputs: dict[str, str] = {}
        timed(ours_cmd), timed(theirs_cmd)  # warm the disk cache and .pyc files
        times: dict[str, list[tuple[float, float]]] = {"ours": [], "theirs": []}
        for _ in range(args.repeats):
            for name, command in (("ours", ours_cmd), ("theirs", theirs_cmd)):
                wall, cpu, out = timed(command)
                times[name].append((wall, cpu))
                outputs[name] = out

    ours_score = json.loads(outputs["ours"])["score"]
    theirs_score = json.loads(outputs["theirs"])["score"]
    wall = {k: statistics.median(t for t, _ in v) for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
    print(f"pairs: {args.pairs}, repeats: {args.repeats} (medians, alternating runs)")
    print(f"explorer bleu : wall {wall['ours']:.3f} s  cpu {cpu['ours']:.3f} s  "
          f"BLEU {ours_score:.4f}")
    print(f"sacrebleu CLI : wall {wall['theirs']:.3f} s  cpu {cpu['theirs']:.3f} s  "
          f"BLEU {theirs_score:.4f}")
    print(f"ratio explorer/sacrebleu: wall {wall['ours'] / wall['theirs']:.2f}x, "
          f"cpu {cpu['ours'] / cpu['theirs']:.2f}x (target <= 1.2x)")
    same = abs(round(ours_score, 4) - theirs_score) < 1e-9
    print("scores agree" if same else "SCORES DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
