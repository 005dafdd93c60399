"""The guard of tests/conftest.py: every place the app or a library would write per user (the
home folder, the XDG folders, QStandardPaths in and out of test mode, the app's runs folder) lies
in the session's temporary home, never in the real one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REAL_HOME = Path(os.environ["EXPLORER_TESTS_REAL_HOME"]).resolve()


def outside_real_home(path) -> bool:
    path = Path(path).resolve()
    return path != REAL_HOME and REAL_HOME not in path.parents


def test_home_and_xdg_folders_are_temporary():
    home = Path.home().resolve()
    assert outside_real_home(home) and home.name.startswith("explorer-tests-home-")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert home in Path(os.environ[name]).resolve().parents, name
    # child processes (the CLI tests' subprocesses) inherit it
    child = subprocess.run([sys.executable, "-c", "import pathlib; print(pathlib.Path.home())"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert Path(child.stdout.strip()).resolve() == home


def test_qt_standard_paths_and_the_app_runs_folder_are_temporary(qapp):
    from PySide6.QtCore import QSettings, QStandardPaths

    from explorer.ui.autosave import runs_root

    locations = (QStandardPaths.StandardLocation.AppDataLocation,
                 QStandardPaths.StandardLocation.AppConfigLocation,
                 QStandardPaths.StandardLocation.CacheLocation,
                 QStandardPaths.StandardLocation.GenericDataLocation)
    test_mode = QStandardPaths.isTestModeEnabled()
    try:
        for enabled in (False, True):  # test mode's ~/.qttest is where the soak's runs went
            QStandardPaths.setTestModeEnabled(enabled)
            for location in locations:
                assert outside_real_home(QStandardPaths.writableLocation(location)), location
            assert outside_real_home(runs_root(QSettings()))
    finally:
        QStandardPaths.setTestModeEnabled(test_mode)
