import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer import __version__

ROOT = Path(__file__).resolve().parent.parent


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


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`explorer bleu ... | head -0`: stdout is a pipe nobody reads; no traceback, SIGPIPE's status."""
    (tmp_path / "hyp.txt").write_text("the cat sat on the mat\n")
    (tmp_path / "ref.txt").write_text("the cat is on the mat\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first write
    try:
        result = subprocess.run(
            [sys.executable, "-m", "explorer", "bleu", "hyp.txt", "ref.txt", "--json"],
            cwd=tmp_path, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )
    finally:
        os.close(write_end)
    assert result.returncode == 141
    assert result.stderr == ""


@pytest.mark.parametrize("command", [
    ["score", "--checkpoint", "ckpt", "--target", b"caf\xe9"],
    ["decode", "--checkpoint", "ckpt", b"caf\xe9"],
    ["export", "--checkpoint", "ckpt", "--out", "figures", "--input", b"caf\xe9"],
])
def test_text_that_is_not_utf8_is_refused_in_one_line(command, tmp_path):
    """Latin-1 "café" from a shell: without the check, the model would read an <unk> in silence."""
    result = subprocess.run([sys.executable, "-m", "explorer", *command], capture_output=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2
    errors = result.stderr.decode().splitlines()
    assert errors[-1].endswith(r"b'caf\xe9' is not valid UTF-8") and "Traceback" not in result.stderr.decode()
