"""torchrun with 2 CPU processes (gloo) trains like 1 process on the same global batch."""

import json
import subprocess
import sys

import pytest

from explorer.runs import RunReader

TRAIN = ["train", "--task", "copy", "--arch", "seq2seq", "--hidden", "16", "--dropout", "0",
         "--steps", "4", "--eval-every", "0", "--batch-size", "8", "--device", "cpu",
         "--threads", "1"]


def run_explorer(prefix, out):
    result = subprocess.run([*prefix, "-m", "explorer", *TRAIN, "--out", str(out)],
                            capture_output=True, timeout=240)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return result.stderr.decode()


def test_two_processes_match_one_process(tmp_path):
    run_explorer([sys.executable], tmp_path / "one")
    err = run_explorer([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node", "2"], tmp_path / "two")
    assert err.count("checkpoint written to") == 1  # rank 0 alone reports and writes

    one, two = RunReader(tmp_path / "one"), RunReader(tmp_path / "two")
    one.read_new(), two.read_new()
    a, b = one.curves().train, two.curves().train
    assert a["step"].tolist() == b["step"].tolist() == [1, 2, 3, 4]
    # copy-task batches pad to different lengths: a mean of per-rank means would be off by ~1e-2
    assert b["loss"].tolist() == pytest.approx(a["loss"].tolist(), rel=1e-4)
    assert b["tokens"].tolist() == a["tokens"].tolist()  # tokens of the global batch
    assert json.loads((tmp_path / "two" / "config.json").read_text())["run"]["world_size"] == 2
    names = sorted(path.name for path in (tmp_path / "one").iterdir())
    assert sorted(path.name for path in (tmp_path / "two").iterdir()) == names  # rank 1: nothing
    if (tmp_path / "two" / "tensorboard").is_dir():
        assert len(list((tmp_path / "two" / "tensorboard").iterdir())) == 1
    assert len([r for r in two.rows if r.get("event") == "started"]) == 1
