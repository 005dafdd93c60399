"""Bad command lines end in one line naming the command and the culprit, exit 2: a bad option
value, an unknown flag, a file given as a checkpoint folder, a weights file that is no tensor file
(and never the advice to load it with weights_only=False). A Hugging Face size below 1:
tests/hf/test_hf_config_sizes.py."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.cli import main

ROOT = Path(__file__).resolve().parent.parent
GPT_MODEL = f"{ROOT / 'tests' / 'usermodel' / 'homework_gpt.py'}:build"


def one_line_error(capsys, argv: list[str]) -> str:
    """Run `explorer ARGV`; assert exit 2, nothing on stdout, one line on stderr; -> that line."""
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's errors leave through sys.exit
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv, expected", [
    (["train", "--task", "reverse", "--lr", "abc"], "explorer train: --lr: 'abc' is not a number"),
    (["decode", "--checkpoint", "x", "--beam", "two", "hi"],
     "explorer decode: --beam: 'two' is not a whole number"),
    (["export", "--checkpoint", "x", "--out", "o", "--theme", "pink"],
     "explorer export: --theme: invalid choice: 'pink' (choose from 'light', 'dark')"),
    (["score", "--checkpoint", "x"],
     "explorer score: the following arguments are required: --target"),
])
def test_a_bad_option_value_is_one_line_without_the_usage(capsys, argv, expected):
    assert one_line_error(capsys, argv) == expected


def test_an_unknown_flag_names_the_command_and_the_nearest_flag(capsys):
    line = one_line_error(capsys, ["train", "--task", "reverse", "--batchsize", "3"])
    assert line == ("explorer train: unrecognized arguments: --batchsize 3 "
                    "(did you mean --batch-size?)")
    line = one_line_error(capsys, ["train", "--task", "reverse", "--bogus-flag", "3"])
    assert line == "explorer train: unrecognized arguments: --bogus-flag 3"  # nothing near it
    line = one_line_error(capsys, ["decode", "--checkpoint", "x", "--nbset", "2", "hi"])
    assert line.startswith("explorer decode: unrecognized arguments: --nbset")
    assert line.endswith("(did you mean --nbest?)")


def test_a_bad_value_through_the_installed_entry_point_too():
    result = subprocess.run([sys.executable, "-m", "explorer", "train", "--task", "reverse",
                             "--lr", "abc"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "explorer train: --lr: 'abc' is not a number\n"


@pytest.mark.parametrize("command", [["decode", "hello"], ["score", "--target", "x"],
                                     ["export", "--out", "o", "--format", "csv"], ["gui"]])
def test_a_file_given_as_checkpoint_is_named_a_file(tmp_path, capsys, command):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    name, *rest = command
    line = one_line_error(capsys, [name, "--checkpoint", str(empty), *rest])
    assert line == f"explorer {name}: error: {empty}: is a file, not a checkpoint folder"


class RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))  # unpickling would create the marker file


def test_weights_that_are_no_tensor_file_say_what_they_are_not(tmp_path, capsys):
    import torch

    random_bytes = tmp_path / "random.bin"
    random_bytes.write_bytes(bytes(range(256)) * 3)
    crafted = tmp_path / "crafted.pt"
    marker = tmp_path / "pwned"
    torch.save({"state": RunsCode(marker)}, crafted)
    plain_pickle = tmp_path / "plain.pkl"
    plain_pickle.write_bytes(pickle.dumps({"w": object}, protocol=4))
    for path, says in ((random_bytes, "not a PyTorch or safetensors file"),
                       (plain_pickle, "refused: a Python pickle that is not plain tensors"),
                       (crafted, "refused: it holds Python objects")):
        line = one_line_error(capsys, ["decode", "--model", GPT_MODEL, "--weights", str(path),
                                       "ab"])
        assert line.startswith(f"explorer decode: error: {path}: {says}"), line
        assert "weights_only" not in line and "trusted source" not in line
    assert not marker.exists()
