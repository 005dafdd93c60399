import atexit
import os
import shutil
import sys
import tempfile

import pytest

# No display in CI: every Qt test runs offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The suite starts `python -m explorer` and other child processes many times. Where the environment
# turns bytecode caches off (PYTHONDONTWRITEBYTECODE, as on this project's machines), each of them
# compiled the package from source again: ~0.2 s a process. The caches go where Python always puts
# them (__pycache__, ignored by git).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
# One intra-op thread: on a small shared machine, torch's thread pool spinning against other
# processes makes tiny models 30x slower. Set before any test imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# Tests never write into the real home folder: a window built without isolated settings (the soak
# benchmark's) saved its runs under QStandardPaths' test-mode ~/.qttest, 14 MB a run. HOME and the
# XDG folders point into a temporary folder for the whole session, child processes included, set
# before Qt or anything else reads them. tests/test_home_isolated.py checks where they lead.
os.environ.setdefault("EXPLORER_TESTS_REAL_HOME", os.path.expanduser("~"))
_SESSION_HOME = tempfile.mkdtemp(prefix="explorer-tests-home-")
atexit.register(shutil.rmtree, _SESSION_HOME, ignore_errors=True)
os.environ["HOME"] = _SESSION_HOME
for _name, _sub in (("XDG_DATA_HOME", ".local/share"), ("XDG_CONFIG_HOME", ".config"),
                    ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):
    os.environ[_name] = os.path.join(_SESSION_HOME, _sub)


# How long a test waits for the signal or state it needs before it fails. A wait is never a speed
# budget: at a load of 10 the 1920x1080 layout test's panels took over 60 s to fill (19 s alone),
# and a limit a busy machine breaks fails a correct program. Speed is measured in benchmarks/.
WAIT_MS = 300_000
QTBOT_WAITS = ("waitUntil", "waitSignal", "waitSignals", "waitExposed", "waitActive",
               "waitCallback")


class GenerousQtBot:
    """pytest-qt's qtbot whose every wait (waitUntil, waitSignal, ...) lasts up to at least
    WAIT_MS: the `timeout=` a test gives (or pytest-qt's 5 s default) is raised to it. A wait
    still returns the moment its condition holds; only a failing test waits the whole limit."""

    def __init__(self, bot) -> None:
        self._bot = bot

    def __getattr__(self, name: str):
        attribute = getattr(self._bot, name)
        if name not in QTBOT_WAITS:
            return attribute

        def wait(*args, timeout: int = 0, **kwargs):
            return attribute(*args, timeout=max(timeout, WAIT_MS), **kwargs)

        return wait


@pytest.fixture(scope="session")
def qapp(qapp):
    """pytest-qt's application as the app sets its own up: plots on the palette's colours
    (pyqtgraph's default is black, so screenshots differed from the app), and garbage collected
    from its event loop only (explorer/ui/gui_thread_gc.py: a collection inside
    topLevelWidgets() once crashed the suite). The app's name is not set: the tests' settings
    stay their own."""
    from explorer.ui.app import apply_theme
    from explorer.ui.gui_thread_gc import collect_on_gui_thread

    apply_theme(qapp)
    collect_on_gui_thread(qapp)
    return qapp


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    """Tests that never spin Qt's event loop still get their garbage collected, on this thread."""
    if "explorer.ui.gui_thread_gc" in sys.modules:
        sys.modules["explorer.ui.gui_thread_gc"].collect_due()


@pytest.fixture
def qtbot(qtbot):
    """pytest-qt's qtbot with generous waits (GenerousQtBot)."""
    return GenerousQtBot(qtbot)


@pytest.fixture(scope="session")
def reverse_checkpoint(tmp_path_factory):
    """A one-layer Transformer on the `reverse` task, saved without optimizer state: the CLI
    export tests' shared model."""
    import torch

    from explorer.training import DataSpec, build_workspace, save_checkpoint

    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                                d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)
    return save_checkpoint(workspace, tmp_path_factory.mktemp("ckpt") / "reverse", optimizer=False)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core, at most four. Each test uses one torch thread (above), and
    a worker with a window and a trained model holds about 1 GB."""
    return max(1, min(4, os.cpu_count() or 1))
