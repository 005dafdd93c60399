import json
import subprocess
import sys

import pytest

from explorer.cli import main

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8"]


def explorer(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "explorer", *args], capture_output=True,
                            timeout=120)
    # decoded by hand: text=True would turn the progress bar's "\r" into "\n"
    result.stdout, result.stderr = result.stdout.decode(), result.stderr.decode()
    return result


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "no data"),
        (["--task", "copy", "--arch", "lstm"], "unknown arch 'lstm'"),
        (["--task", "brackets", "--arch", "gpt", "--cell", "gru"], "--cell does not apply to gpt"),
        (["--data", "/no/such/file.txt"], "/no/such/file.txt"),
        (["--task", "copy", "--lr", "-1"], "learning rate must be positive"),
        (["--task", "copy", "--optimizer", "adagrad"], "unknown optimizer"),
        (["--resume", "/no/such/checkpoint"], "no such checkpoint"),
        (["--task", "copy", "--steps", "1"], "--out DIR"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, message, capsys, tmp_path):
    out = [] if message == "--out DIR" else ["--out", str(tmp_path / "ck")]
    code = main(["train", *args, *out, *FAST])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("explorer train: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_config_file_is_a_user_error(capsys, tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"task": "copy", "learning_rate": 3}))
    assert main(["train", "--config", str(config)]) == 2
    assert "unknown options: learning_rate" in capsys.readouterr().err


def test_train_writes_a_checkpoint_resumes_and_takes_a_config_file(tmp_path):
    out = tmp_path / "ck"
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"task": "copy", "arch": "seq2seq", "hidden": 16, "steps": 50,
                                  "eval_every": 3, "attention": "dot"}))
    result = explorer("train", "--config", str(config), "--steps", "6", "--out", str(out), *FAST)
    assert result.returncode == 0, result.stderr
    assert "\rstep 6/6 [" in result.stderr and "tok/s" in result.stderr
    assert "val loss" in result.stderr and "BLEU" in result.stderr
    assert f"checkpoint written to {out}" in result.stderr
    saved = json.loads((out / "config.json").read_text())
    assert saved["step"] == 6 and saved["model"]["hidden_size"] == 16  # the flag beat the file
    assert saved["model"]["attention"] == "dot"

    result = explorer("train", "--resume", str(out), "--steps", "8", *FAST)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "config.json").read_text())["step"] == 8
    lines = (out / "metrics.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]  # a run's rows: steps, evaluations, events
    assert [row["step"] for row in rows if "event" not in row] == list(range(1, 9))

    result = explorer("train", "--resume", str(out), "--cell", "lstm")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "drop --cell" in result.stderr


def test_train_reports_the_lines_it_skipped(capsys, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("to be or not to be, that is the question\n\n" * 10)
    code = main(["train", "--data", str(corpus), "--arch", "gpt", "--context", "8", "--steps", "1",
                 "--eval-every", "1", "--out", str(tmp_path / "ck"), *FAST])
    assert code == 0
    assert f"data: {corpus}: kept 10 lines, skipped 10 (10 blank)\n" in capsys.readouterr().err


def test_data_file_of_pairs_trains_a_seq2seq_model_without_arch(capsys, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"w{i} x\tx w{i}\n" for i in range(20)))
    assert main(["train", "--data", str(pairs), "--steps", "1", "--out", str(tmp_path / "ck"), *FAST]) == 0
    saved = json.loads((tmp_path / "ck" / "config.json").read_text())
    assert saved["model"]["family"] == "seq2seq" and saved["data"]["tsv"] == str(pairs)
    text = tmp_path / "text.txt"
    text.write_text("no tabs here, just a line of text to model\n" * 20)
    assert main(["train", "--data", str(text), "--context", "8", "--steps", "1",
                 "--out", str(tmp_path / "lm"), *FAST]) == 0
    assert json.loads((tmp_path / "lm" / "config.json").read_text())["model"]["family"] == "gpt"
