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
        (["--task", "copy", "--time-limit", "0"], "time limit must be positive"),
        (["--task", "copy", "--threads", "0"], "threads must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(args, message, capsys, tmp_path):
    out = [] if message == "--out DIR" else ["--out", str(tmp_path / "ck")]
    code = main(["train", *FAST, *args, *out])  # the case's flags last: they win
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
    assert "step 6/6: loss" in result.stderr and "tok/s" in result.stderr  # not a terminal: a log
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


def test_a_bad_task_is_named_before_the_missing_out(capsys):
    assert main(["train", "--task", "nosuch", *FAST]) == 2
    assert "unknown task 'nosuch'" in capsys.readouterr().err


def test_progress_into_a_file_is_one_plain_line_per_evaluation(tmp_path):
    result = explorer("train", "--task", "copy", "--hidden", "16", "--steps", "6", "--eval-every",
                      "2", "--out", str(tmp_path / "ck"), *FAST)
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("step ")]
    assert [line.split(":")[0] for line in lines] == ["step 2/6", "step 4/6", "step 6/6"]
    for line in lines:
        assert "loss" in line and "tok/s" in line and "val loss" in line


def test_time_limit_stops_cleanly_evaluates_and_saves(tmp_path):
    out = tmp_path / "ck"
    # 0.01 minutes: a fraction of a second, long before 100000 steps
    result = explorer("train", "--task", "copy", "--hidden", "16", "--steps", "100000",
                      "--eval-every", "0", "--time-limit", "0.01", "--out", str(out), *FAST)
    assert result.returncode == 0, result.stderr
    saved = json.loads((out / "config.json").read_text())
    assert 0 < saved["step"] < 100000 and saved["train"]["time_limit"] == 0.01
    assert f"time limit of 0.01 min reached at step {saved['step']}" in result.stderr
    assert f"step {saved['step']}/100000: loss" in result.stderr  # evaluated before it stopped
    assert f"checkpoint written to {out}" in result.stderr


def test_config_takes_every_train_and_model_field_and_flags_win(tmp_path):
    out = tmp_path / "ck"
    config = tmp_path / "run.json"
    config.write_text(json.dumps({
        "task": "copy", "arch": "seq2seq", "embed_dim": 12, "hidden_size": 20, "num_layers": 1,
        "max_src_len": 40, "bidirectional_encoder": False, "eval_examples": 7, "bleu_examples": 3,
        "weight_decay": 0.5, "betas": [0.8, 0.9], "num_threads": 1, "steps": 3, "lr": 0.01,
    }))
    result = explorer("train", "--config", str(config), "--lr", "0.02", "--out", str(out), *FAST)
    assert result.returncode == 0, result.stderr
    saved = json.loads((out / "config.json").read_text())
    model, train = saved["model"], saved["train"]
    assert (model["embed_dim"], model["hidden_size"], model["max_src_len"]) == (12, 20, 40)
    assert model["bidirectional_encoder"] is False
    assert (train["eval_examples"], train["bleu_examples"], train["weight_decay"]) == (7, 3, 0.5)
    assert train["betas"] == [0.8, 0.9] and train["lr"] == 0.02  # the flag beat the file


@pytest.mark.parametrize(
    "content, message",
    [
        ({"task": "copy", "no_such_field": 1}, "unknown options: no_such_field"),
        ({"task": "copy", "eval_examples": "many"}, 'eval_examples should be a whole number, got "many"'),
        ({"task": "copy", "lr": True}, "lr should be a number, got true"),
        ({"task": "copy", "betas": [0.9]}, "betas should be a list of 2 numbers"),
        ({"task": "copy", "steps": 2.5}, "steps should be a whole number, got 2.5"),
        ({"task": "copy", "d_ff": 64}, "seq2seq models have no setting d_ff"),
        (["copy"], "expected a JSON object"),
    ],
)
def test_config_errors_are_one_line(content, message, capsys, tmp_path):
    config = tmp_path / "run.json"
    config.write_text(json.dumps(content))
    assert main(["train", "--config", str(config), "--out", str(tmp_path / "ck"), *FAST]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_recipes_hold_the_benchmark_and_its_result_and_flags_override_them(tmp_path):
    from explorer.commands.train_options import load_recipe, recipe_names

    assert {"multi30k-transformer", "multi30k-gru-additive"} <= set(recipe_names())
    recipe = load_recipe("multi30k-transformer")
    assert recipe["reached"]["bleu"] > 30 and recipe["options"]["time_limit"] > 0
    # the recipe on a tiny corpus, cut short by the flags: its model and optimiser, our length
    src, tgt = tmp_path / "train.de", tmp_path / "train.en"
    src.write_text("ein hund läuft\neine katze schläft\n" * 20, encoding="utf-8")
    tgt.write_text("a dog runs\na cat sleeps\n" * 20, encoding="utf-8")
    out = tmp_path / "ck"
    result = explorer("train", "--recipe", "multi30k-transformer", "--src", str(src), "--tgt",
                      str(tgt), "--vocab-size", "60", "--steps", "2", "--eval-every", "0",
                      "--out", str(out), *FAST)
    assert result.returncode == 0, result.stderr
    saved = json.loads((out / "config.json").read_text())
    assert saved["model"]["family"] == "transformer" and saved["model"]["d_model"] == 128
    assert saved["model"]["d_ff"] == 512 and saved["model"]["max_len"] == 128
    assert saved["train"]["schedule"] == "noam" and saved["train"]["eval_examples"] == 1014
    assert saved["step"] == 2 and saved["train"]["batch_size"] == 8  # the flags won


def test_an_unknown_recipe_lists_the_known_ones(capsys):
    assert main(["train", "--recipe", "nosuch", "--task", "copy"]) == 2
    assert "unknown recipe 'nosuch'; choose one of multi30k-gru-additive" in capsys.readouterr().err


def test_on_a_terminal_progress_is_a_bar_redrawn_in_place():
    import io

    from explorer.commands.train import ProgressPrinter
    from explorer.events import EvalMetrics, StepMetrics, TrainingFinished

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    printer = ProgressPrinter(stream, min_interval_s=0.0, time_limit=2.0)
    for step in (1, 2):
        printer.show(StepMetrics(step=step, loss=1.5, lr=1e-3, grad_norm=1.0, grad_norm_clipped=1.0,
                                 tokens=100, tokens_per_s=500.0, elapsed_s=0.2 * step, total_steps=4))
    printer.show(EvalMetrics(step=2, val_loss=1.25, perplexity=3.49, token_accuracy=0.5))
    printer.show(TrainingFinished(2, "time", "time limit of 2 min reached at step 2"))
    text = stream.getvalue()
    assert text.startswith("\rstep 1/4 [") and "\rstep 2/4 [############............] 0:00/2:00 loss" in text
    assert "\nstep 2: val loss 1.2500" in text and text.endswith("time limit of 2 min reached at step 2\n")


def test_threads_are_chosen_at_start_unless_asked_for():
    from explorer.commands.train import _train_config
    from explorer.training import TrainConfig

    assert _train_config({}, None).num_threads is None  # explorer.runtime.choose_threads
    assert _train_config({"threads": 2}, None).num_threads == 2
    # a resumed checkpoint's count was the load when it trained, not now
    assert _train_config({}, TrainConfig(num_threads=1)).num_threads is None


def test_one_table_maps_every_flag_to_the_config_field_it_sets():
    import argparse
    import dataclasses

    from explorer.commands.train import add_arguments
    from explorer.commands.train_options import FLAG_FIELDS, flag_of_field, model_fields
    from explorer.training.config import TrainConfig

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    options = {action.dest for action in parser._actions}
    train = {f.name for f in dataclasses.fields(TrainConfig)}
    for flag, (config, field) in FLAG_FIELDS.items():
        assert flag in options, flag
        assert field in (train if config == "train" else model_fields()), (flag, field)
        assert flag_of_field(field) == flag
    assert flag_of_field("embed_dim") == "embed_dim"  # a field no flag names keeps its name
