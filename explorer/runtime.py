"""Process-wide settings that `explorer` applies once at start-up, before any model runs."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import sys
import time
from dataclasses import dataclass

# glibc serves allocations above its mmap threshold with fresh mmap()s, and the threshold moves
# with what was freed last. Decoding grows its key/value caches a little every step, so each new
# cache is just above the last threshold: every step paid fresh page faults, and the 64th beam
# step cost 1.6x the 8th (benchmarks/bench_beam.py). Serving blocks up to this size from the
# heap, and keeping up to this much freed heap instead of trimming it, makes the cost flat.
HEAP_SERVED_BYTES = 256 << 20
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # from glibc's malloc.h


def tune_allocator(size: int = HEAP_SERVED_BYTES) -> bool:
    """Set glibc's mmap and trim thresholds; True if applied (False off glibc, e.g. macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, size)) and bool(mallopt(M_TRIM_THRESHOLD, size))


# -- CPU threads ---------------------------------------------------------------------------------
# torch's default (one intra-op thread per core) is the fastest on free cores, but a thread whose
# core is taken by other work makes every parallel op wait for it: with one busy loop beside it,
# two threads trained at a third of one thread's speed (benchmarks/RESULTS.md, "Threads under
# load"). So the default is torch's, unless the load average says cores are taken.


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    note: str | None = None  # one line when the default was lowered for a busy machine


@functools.cache
def torch_default_threads() -> int:
    """torch's own default, read before anything in this process changes it."""
    import torch

    return torch.get_num_threads()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity masks
        return os.cpu_count() or 1


_own_sample = (time.monotonic(), time.process_time())  # (wall, CPU) seconds, see _own_load


def _own_load() -> float:
    """About how much of the load average is this process itself (an app that trained a minute
    ago put its own threads there): its CPU seconds since the last look, over at least a minute
    (the load average's window)."""
    global _own_sample
    wall, cpu = time.monotonic(), time.process_time()
    last_wall, last_cpu = _own_sample
    _own_sample = (wall, cpu)
    return (cpu - last_cpu) / max(60.0, wall - last_wall)


def _cpu_jiffies() -> tuple[int, int, int] | None:
    """(busy, total, CPUs) jiffies summed over the machine's CPUs, from /proc/stat (Linux)."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    fields = [int(f) for f in lines[0].split()[1:]]  # user nice system idle iowait irq softirq ...
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    total = sum(fields[:8])  # guest time is already counted in user
    return total - fields[3] - fields[4], total, cpus


def _busy_cores_now(window_s: float = 0.25) -> float | None:
    """How many cores other processes keep busy right now: /proc/stat sampled over `window_s`,
    less this process's own CPU time meanwhile. None where /proc/stat is missing."""
    first, cpu_before = _cpu_jiffies(), time.process_time()
    if first is None:
        return None
    time.sleep(window_s)
    second, own = _cpu_jiffies(), time.process_time() - cpu_before
    busy, total = second[0] - first[0], second[1] - first[1]
    if total <= 0:
        return None
    return max(0.0, busy / total * second[2] - own / window_s)


def choose_threads(requested: int | None = None, keep_cores: int = 0) -> ThreadChoice:
    """`requested` (--threads N) if given; else torch's default, or as many threads as other work
    leaves cores free (at least one). The load average is a minute's mean, so work that just ended
    (a run a moment ago, this benchmark's last round) still looks busy in it: when it says cores are
    taken, a quarter second of /proc/stat says whether they are taken now. `keep_cores` are left
    to this process's other threads: the app keeps one for its window, whose paints would otherwise
    take a core from one of torch's threads and stall the others at every operation."""
    if requested:
        return ThreadChoice(requested)
    wanted = max(1, min(torch_default_threads(), usable_cores() - keep_cores))
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return ThreadChoice(wanted)
    others = max(0.0, load - _own_load())
    free = max(1, int(usable_cores() - keep_cores - others + 0.5))
    if free < wanted and (busy_now := _busy_cores_now()) is not None:
        others = min(others, busy_now)
        free = max(1, int(usable_cores() - keep_cores - others + 0.5))
    if free >= wanted:
        return ThreadChoice(wanted)
    return ThreadChoice(free, f"load average {load:.1f} on {usable_cores()} cores: using {free} "
                              f"CPU thread{'s' * (free > 1)} instead of {wanted} "
                              "(--threads N to choose)")
