"""Process-wide settings that `explorer` applies once at start-up, before any model runs."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

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
