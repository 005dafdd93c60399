import os

# No display in CI: every Qt test runs offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One intra-op thread: on a small shared machine, torch's thread pool spinning against other
# processes makes tiny models 30x slower. Set before any test imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")
