"""`explorer bleu` against sacreBLEU's Python API, and its errors."""

import gzip
import json
import random
import subprocess
import sys

import pytest
from sacrebleu.metrics import BLEU

from explorer.cli import main

WORDS = "a man in a white robe stands and talks to people who are sitting . , The".split()


def write_corpus(tmp_path, n=50, num_refs=1, seed=0):
    rng = random.Random(seed)
    refs = [[" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(n)]
            for _ in range(num_refs)]
    hyps = [" ".join(w for w in refs[0][i].split() if rng.random() > 0.2) for i in range(n)]
    hyp_path = tmp_path / "hyp.txt"
    hyp_path.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    ref_paths = []
    for k, stream in enumerate(refs):
        path = tmp_path / f"ref{k}.txt"
        path.write_text("\n".join(stream) + "\n", encoding="utf-8")
        ref_paths.append(str(path))
    return hyps, refs, str(hyp_path), ref_paths


def test_text_output_is_sacrebleus_line_and_signature(tmp_path, capsys):
    hyps, refs, hyp_path, ref_paths = write_corpus(tmp_path)
    assert main(["bleu", hyp_path, *ref_paths]) == 0
    metric = BLEU()
    expected = metric.corpus_score(hyps, refs)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [expected.format(), f"signature: {metric.get_signature().format()}"]
    assert lines[0].startswith("BLEU = ")


@pytest.mark.parametrize(
    "flags, options",
    [
        ([], {}),
        (["--lowercase"], {"lowercase": True}),
        (["--tokenize", "char"], {"tokenize": "char"}),
        (["--smooth", "floor", "--smooth-value", "0.2"], {"smooth_method": "floor",
                                                          "smooth_value": 0.2}),
    ],
)
def test_json_output_equals_sacrebleu_api_with_two_references(tmp_path, capsys, flags, options):
    hyps, refs, hyp_path, ref_paths = write_corpus(tmp_path, num_refs=2, seed=len(flags))
    assert main(["bleu", hyp_path, *ref_paths, "--json", *flags]) == 0
    data = json.loads(capsys.readouterr().out)
    metric = BLEU(**options)
    expected = metric.corpus_score(hyps, refs)
    assert data["score"] == pytest.approx(expected.score, abs=1e-9)
    assert data["counts"] == expected.counts and data["totals"] == expected.totals
    assert data["precisions"] == pytest.approx(expected.precisions, abs=1e-9)
    assert data["bp"] == pytest.approx(expected.bp)
    assert (data["sys_len"], data["ref_len"]) == (expected.sys_len, expected.ref_len)
    assert data["signature"] == metric.get_signature().format()


def test_gzipped_files_read_like_plain_ones(tmp_path, capsys):
    hyps, refs, hyp_path, ref_paths = write_corpus(tmp_path, seed=4)
    gz_path = tmp_path / "ref0.txt.gz"
    gz_path.write_bytes(gzip.compress((tmp_path / "ref0.txt").read_bytes()))
    assert main(["bleu", hyp_path, str(gz_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == pytest.approx(
        BLEU().corpus_score(hyps, refs).score)


def test_files_of_different_lengths_exit_2_naming_the_file(tmp_path, capsys):
    _, _, hyp_path, ref_paths = write_corpus(tmp_path, n=10)
    short = tmp_path / "short.txt"
    short.write_text("one line\n", encoding="utf-8")
    assert main(["bleu", hyp_path, ref_paths[0], str(short)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "short.txt" in err and "1 lines" in err and "10" in err


@pytest.mark.parametrize(
    "content, message",
    [(None, "no such file"), (b"ok\n\xff\xfe bad\n", ":2: invalid UTF-8"),
     (b"\x00\x01\x02binary", ":1: binary data")],
)
def test_unreadable_reference_exits_2_with_one_line(tmp_path, capsys, content, message):
    _, _, hyp_path, _ = write_corpus(tmp_path, n=2)
    bad = tmp_path / "bad.txt"
    if content is not None:
        bad.write_bytes(content)
    assert main(["bleu", hyp_path, str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.txt" in err and message in err
    assert "Traceback" not in err


def test_bleu_command_runs_without_importing_torch(tmp_path):
    hyps, refs, hyp_path, ref_paths = write_corpus(tmp_path, seed=8)
    code = (
        "import sys; from explorer.cli import main\n"
        f"code = main(['bleu', {hyp_path!r}, {ref_paths[0]!r}])\n"
        "assert 'torch' not in sys.modules and 'PySide6' not in sys.modules\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == BLEU().corpus_score(hyps, refs).format()
