import subprocess
import sys

from explorer import __version__


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "explorer", *args], capture_output=True, text=True, timeout=60
    )


def test_version_answers_without_importing_torch():
    code = (
        "import sys; from explorer.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules and 'PySide6' not in sys.modules, sorted(sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"explorer {__version__}"


def test_help_lists_every_command_without_importing_torch():
    code = (
        "import sys; from explorer.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'torch' not in sys.modules and 'PySide6' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for command in ("gui", "train", "score", "decode", "bleu", "export"):
        assert command in result.stdout


def test_python_dash_m_explorer_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert __version__ in result.stdout
