"""Inputs far beyond what a model reads (one 20 MB line) end in one line, refused or split, with
memory bounded: each command runs in a child process whose peak RSS (getrusage) must stay under
2 GB. Before, `decode --input` of such a line grew past 23 GB."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HUGE = 20 * 2**20  # characters on one line
BUDGET_KB = 2 * 2**20  # 2 GB peak RSS, in ru_maxrss's kilobytes
# the wrapper runs the command and prints the child's peak RSS; an address-space cap of 8 GB makes
# a regression fail with MemoryError instead of swapping a shared machine to death
MEASURE = """
import resource, subprocess, sys
cap = 8 * 2**30
run = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300,
                     preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
sys.stdout.write(run.stdout[-2000:])
sys.stderr.write(run.stderr[-2000:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, run.returncode)
"""


def measured(*args, cwd) -> tuple[int, int, str, str]:
    """(peak RSS in kB, exit code, stdout, stderr) of `python -m explorer ARGS` in a child."""
    result = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "explorer", *args],
                            capture_output=True, text=True, timeout=400, cwd=cwd,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    *out, last = result.stdout.rstrip("\n").split("\n")
    peak, code = (int(v) for v in last.split())
    return peak, code, "\n".join(out), result.stderr


@pytest.fixture(scope="module")
def huge_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("huge") / "huge.txt"
    path.write_text(("hello world " * (HUGE // 12 + 1))[:HUGE] + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gru_checkpoint(tmp_path_factory):
    """The issue's case: a GRU seq2seq with additive attention, which has no position table."""
    from explorer.training import DataSpec, build_workspace, save_checkpoint

    workspace = build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "seq2seq", seed=0,
                                cell="gru", attention="additive", embed_dim=8, hidden_size=16)
    return save_checkpoint(workspace, tmp_path_factory.mktemp("gru") / "reverse", optimizer=False)


def test_decoding_a_20_mb_line_is_refused_in_one_line_within_2_gb(huge_file, gru_checkpoint,
                                                                   tmp_path):
    peak, code, out, err = measured("decode", "--checkpoint", str(gru_checkpoint), "--input",
                                    str(huge_file), cwd=tmp_path)
    assert code == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1
    assert f"{huge_file}:1 has " in err and f"{HUGE:,} characters" in err
    assert peak < BUDGET_KB, f"peak RSS {peak / 2**20:.2f} GB"


@pytest.mark.parametrize("model", ["gru", "transformer"])
def test_a_long_line_among_good_ones_is_refused_before_any_output(
        model, gru_checkpoint, reverse_checkpoint, tmp_path, capsys):
    """Over the model's limit (4096 tokens without positions, else its positions) but cheap to
    tokenize: refused by its token count, naming its line, before the good first line is decoded
    (no half-written output)."""
    from explorer.cli import main
    from explorer.decoding.limits import UNBOUNDED_LIMIT

    limit = UNBOUNDED_LIMIT if model == "gru" else 64  # the transformer's max_len
    inputs = tmp_path / "in.txt"
    inputs.write_text("abc\n" + "ab" * limit + "\n", encoding="utf-8")
    checkpoint = gru_checkpoint if model == "gru" else reverse_checkpoint
    code = main(["decode", "--checkpoint", str(checkpoint), "--input", str(inputs)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"{inputs}:2 has {2 * limit + 1:,} tokens" in err and f"({limit} at most)" in err


def test_score_refuses_a_target_longer_than_the_model_reads(reverse_checkpoint, capsys):
    from explorer.cli import main

    code = main(["score", "--checkpoint", str(reverse_checkpoint), "--source", "abc",
                 "--target", "a" * 100_000])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "the target has 100,000 characters" in err and "(64 tokens at most)" in err


def test_export_refuses_a_probe_input_longer_than_the_model_reads(reverse_checkpoint, tmp_path,
                                                                  capsys):
    from explorer.cli import main

    code = main(["export", "--checkpoint", str(reverse_checkpoint), "--out", str(tmp_path / "f"),
                 "--plots", "attention", "--input", "ab" * 20_000])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--input has 40,000 char" in err
    assert not (tmp_path / "f").exists()


def test_the_probe_refuses_a_huge_text_before_tokenizing_it(gru_checkpoint):
    from explorer.analysis.probe import probe
    from explorer.errors import UserError
    from explorer.training import load_checkpoint

    workspace = load_checkpoint(gru_checkpoint)
    with pytest.raises(UserError, match="the probe source has 1,000,000 characters"):
        probe(workspace, "a" * 1_000_000, "b")
    assert probe(workspace, "abc", "cba").attention  # a normal probe still works


@pytest.mark.slow
def test_lm_data_of_one_20_mb_line_trains_on_blocks_within_2_gb(huge_file, tmp_path):
    """One line of plain text is a stream, not one example: its last 10% is held out, as nanoGPT
    does, instead of "need at least 2 examples"."""
    peak, code, out, err = measured(
        "train", "--data", str(huge_file), "--arch", "gpt", "--preset", "tiny", "--context", "16",
        "--batch-size", "2", "--steps", "2", "--eval-every", "0", "--out", str(tmp_path / "lm"),
        cwd=tmp_path)
    assert code == 0, err
    assert peak < BUDGET_KB, f"peak RSS {peak / 2**20:.2f} GB"
    from explorer.training.setup import DataSpec, read_data

    splits = read_data(DataSpec(text=str(huge_file)))
    assert [len(t) for t, _ in splits.train] == [HUGE - HUGE // 10]
    assert [len(t) for t, _ in splits.val] == [HUGE // 10 + (round(HUGE * 0.1) - HUGE // 10)]
    assert splits.train[0][0] + splits.val[0][0] == huge_file.read_text(encoding="utf-8")[:-1]
    assert json.loads((tmp_path / "lm" / "config.json").read_text())["step"] == 2


def test_the_bleu_file_refuses_a_huge_source_naming_the_file(gru_checkpoint, tmp_path):
    """The app's BLEU file dialog: a parallel file with one huge source."""
    from explorer.decoding.file_bleu import parallel_file_bleu
    from explorer.errors import UserError
    from explorer.training import load_checkpoint

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("abc\tcba\n" + "ab" * 100_000 + "\tba\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"^{pairs}: the input has 200,000 characters"):
        parallel_file_bleu(load_checkpoint(gru_checkpoint), pairs)
