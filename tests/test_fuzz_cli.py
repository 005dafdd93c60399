"""`explorer train` with fuzzed data files and --config files: it trains, or it ends with a
one-line error and exit code 2; never a traceback."""

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from explorer.cli import main

FAST = ["--steps", "1", "--device", "cpu", "--threads", "1", "--eval-every", "0"]
FUZZ = settings(max_examples=8, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
SMALL = (st.none() | st.booleans() | st.integers(-8, 64) | st.floats(-2, 2, allow_nan=False)
         | st.sampled_from(["", "gru", "lstm", "dot", "bpe", "word", "noam", "sgd", "x" * 300,
                            "\x00", "\U0001f600"]))
OPTIONS = ["lr", "batch_size", "optimizer", "schedule", "warmup", "clip", "label_smoothing",
           "seed", "hidden", "layers", "dropout", "attention", "cell", "tokenizer", "vocab_size",
           "context", "heads", "d_model", "epochs", "bogus"]


def exit_2_in_one_line_or_success(code, err):
    assert "Traceback" not in err
    if code != 0:
        lines = [line for line in err.splitlines() if "error" in line]
        assert code == 2 and len(lines) == 1 and lines[0].startswith("explorer train: error: ")


@FUZZ
@given(data=st.binary(max_size=400), arch=st.sampled_from(["gpt", "seq2seq", "rnn-lm"]))
@example(data=b"a\tb\n" * 20, arch="seq2seq")
@example(data=b"\xef\xbb\xbf" + "\u05e9\u05dc\u05d5\u05dd e\u0301 \U0001f600\n".encode() * 20,
         arch="gpt")
def test_train_on_random_data_files(tmp_path, capsys, data, arch):
    path = tmp_path / "data.txt"
    path.write_bytes(data)
    sizes = ["--context", "8", "--d-model", "16", "--heads", "2"] if arch == "gpt" else [
        "--hidden", "8"]
    code = main(["train", "--data", str(path), "--arch", arch, *sizes, "--batch-size", "2",
                 "--out", str(tmp_path / "ck"), *FAST])
    exit_2_in_one_line_or_success(code, capsys.readouterr().err)


@FUZZ
@given(options=st.dictionaries(st.sampled_from(OPTIONS), SMALL, max_size=4),
       arch=st.sampled_from(["seq2seq", "gpt"]))
@example(options={"dropout": 5}, arch="seq2seq")
@example(options={"context": 100_000_000}, arch="gpt")  # a 25 GB positional table
@example(options={"batch_size": 2.5}, arch="gpt")
@example(options={"lr": "fast"}, arch="seq2seq")
def test_train_with_fuzzed_config_files(tmp_path, capsys, options, arch):
    task = "brackets" if arch == "gpt" else "copy"
    options = {**options, "task": task, "arch": arch}
    config = tmp_path / "run.json"
    config.write_text(json.dumps(options))
    code = main(["train", "--config", str(config), "--out", str(tmp_path / "ck"), *FAST])
    exit_2_in_one_line_or_success(code, capsys.readouterr().err)
