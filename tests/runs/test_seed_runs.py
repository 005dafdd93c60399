"""benchmarks/make_seed_runs.py --quick: the seeds' three comparisons as seven run folders and a
summary whose numbers are those the runs recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from explorer.runs import RunReader

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "make_seed_runs.py"
RUNS = {  # run folder -> what its config.json must say about the model
    "gradflow-rnn": {"family": "rnn-lm", "cell": "rnn"},
    "gradflow-gru": {"family": "rnn-lm", "cell": "gru"},
    "gradflow-lstm": {"family": "rnn-lm", "cell": "lstm"},
    "attention-additive": {"family": "seq2seq", "attention": "additive"},
    "attention-none": {"family": "seq2seq", "attention": "none"},
    "transformer-prenorm": {"family": "transformer", "norm_first": True},
    "transformer-postnorm": {"family": "transformer", "norm_first": False},
}


def last_eval(folder: Path, key: str):
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [row[key] for row in rows if row.get("event") == "eval" and key in row][-1]


def test_quick_seed_runs_write_seven_readable_runs_and_a_true_summary(tmp_path):
    out = tmp_path / "seed"
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary == json.loads((out / "summary.json").read_text())
    assert set(summary["runs"]) == set(RUNS)
    for name, model in RUNS.items():
        reader = RunReader(out / name)
        reader.read_new()
        config = reader.config()
        assert {key: config["model"][key] for key in model} == model
        assert config["run"]["seed"] == 0 and reader.finished is not None
        assert reader.snapshots() and reader.snapshots()[0].step == 0
        run = summary["runs"][name]
        assert run["steps"] == summary["steps"] == 12
        assert run["final_val_loss"] == round(last_eval(out / name, "val_loss"), 4)
        for key in ("final_train_loss", "final_token_accuracy", "wall_s"):
            assert isinstance(run[key], float)
    for name in ("attention-additive", "attention-none"):
        assert summary["runs"][name]["final_bleu"] == round(last_eval(out / name, "bleu"), 4)
    assert summary["bleu_with_attention"] == summary["runs"]["attention-additive"]["final_bleu"]
    assert summary["bleu_without_attention"] == summary["runs"]["attention-none"]["final_bleu"]
    assert summary["bleu_gap"] == round(summary["bleu_with_attention"]
                                        - summary["bleu_without_attention"], 2)
    for cell in ("rnn", "gru", "lstm"):
        flow = summary["gradient_flow"][cell]
        ratios = summary["gradient_ratio_first_last"][cell]
        for label in ("initial", "trained"):
            norms = flow[label]
            assert len(norms) == 100 and norms[-1] > 0
            assert ratios[label] == norms[0] / norms[-1]
    assert set(summary["prenorm_vs_postnorm"]) == {"val_loss", "bleu"}
    assert (out / "summary.md").read_text().startswith("| run |")
    assert (out / "gradient_flow.csv").read_text().splitlines()[0].startswith("t,rnn_initial")

    again = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and "already holds" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
