"""`explorer replay RUN --out DIR`: exact on CPU, through resumes, and refused when data changed."""

import json

from explorer.cli import main

FAST = ["--threads", "1", "--device", "cpu", "--batch-size", "8"]


def step_losses(folder):
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in rows if "event" not in r}


def test_replay_is_exact_on_cpu_through_a_resume(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"the {i} cat\tle {i} chat\n" for i in range(60)))
    run = tmp_path / "run"
    assert main(["train", "--data", str(pairs), "--arch", "transformer", "--d-model", "16",
                 "--steps", "6", "--eval-every", "3", "--schedule", "cosine", "--dropout", "0.1",
                 "--out", str(run), *FAST]) == 0
    # resumed with other settings: replay must repeat both segments as they were
    assert main(["train", "--resume", str(run), "--steps", "10", "--lr", "3e-3", *FAST]) == 0
    capsys.readouterr()

    again = tmp_path / "again"
    assert main(["replay", str(run), "--out", str(again)]) == 0
    err = capsys.readouterr().err
    assert err.rstrip().splitlines()[-1] == ("replayed steps 1-10: losses identical to the "
                                             "recorded ones (max abs diff 0, max rel diff 0)")
    assert step_losses(again) == step_losses(run)
    segments = [json.loads(line) for line in (again / "metrics.jsonl").read_text().splitlines()]
    assert [r["event"] for r in segments if r.get("event") in ("started", "resumed")] == [
        "started", "resumed"]


def test_replay_refuses_a_changed_data_file(tmp_path, capsys):
    text = tmp_path / "corpus.txt"
    text.write_text("to be or not to be\n" * 40)
    run = tmp_path / "run"
    assert main(["train", "--data", str(text), "--arch", "gpt", "--context", "8", "--d-model",
                 "16", "--steps", "2", "--out", str(run), *FAST]) == 0
    with open(text, "a") as out:
        out.write("one more line\n")
    capsys.readouterr()
    assert main(["replay", str(run), "--out", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert err == (f"explorer replay: error: {text}: changed since the run was recorded (its "
                   "sha256 differs); replay needs the data the run trained on\n")
    assert not (tmp_path / "again").exists()


def test_replay_of_a_folder_that_is_not_a_run(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    assert main(["replay", str(tmp_path / "x"), "--out", str(tmp_path / "y")]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_replay_refuses_a_run_whose_data_changed_between_its_segments(tmp_path, capsys):
    text = tmp_path / "corpus.txt"
    text.write_text("to be or not to be\n" * 40)
    run = tmp_path / "run"
    args = ["--context", "8", "--d-model", "16"]
    assert main(["train", "--data", str(text), "--arch", "gpt", *args, "--steps", "2",
                 "--out", str(run), *FAST]) == 0
    text.write_text("not to be or to be\n" * 40)  # edited, then the run was resumed on it
    assert main(["train", "--resume", str(run), "--steps", "3", *FAST]) == 0
    capsys.readouterr()
    assert main(["replay", str(run), "--out", str(tmp_path / "again")]) == 2
    assert "changed since the run was recorded" in capsys.readouterr().err


def test_snapshot_every_0_means_none_in_replay_as_in_train(tmp_path, capsys):
    text = tmp_path / "corpus.txt"
    text.write_text("to be or not to be\n" * 40)
    run, again = tmp_path / "run", tmp_path / "again"
    assert main(["train", "--data", str(text), "--arch", "rnn-lm", "--hidden", "8", "--steps", "2",
                 "--snapshot-every", "1", "--out", str(run), *FAST]) == 0
    assert len(list((run / "snapshots").iterdir())) == 3  # steps 0, 1 and 2
    assert main(["replay", str(run), "--out", str(again), "--snapshot-every", "0"]) == 0
    capsys.readouterr()
    assert not (again / "snapshots").exists() or not any((again / "snapshots").iterdir())
    assert json.loads((again / "config.json").read_text())["run"]["snapshot_every"] == 0
