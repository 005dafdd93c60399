import os

# No display in CI: every Qt test runs offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
