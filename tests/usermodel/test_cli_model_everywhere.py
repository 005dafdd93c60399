"""Every command takes `--model FILE.py:build [--weights]`, loaded in one place
(explorer/commands/model_args.py), and bad models are one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from explorer.cli import build_parser, main
from explorer.data.tasks import make_task
from tests.usermodel import bad_models, homework_seq2seq

HOMEWORK = f"{Path(homework_seq2seq.__file__)}:build"
BAD = Path(bad_models.__file__)
COMMANDS = ("decode", "score", "evaluate", "fill", "attribute", "export", "gui", "train", "check")


def test_every_command_takes_model_and_weights():
    parser = build_parser()
    for command in COMMANDS:
        sub = parser._subparsers._group_actions[0].choices[command]
        flags = {option for action in sub._actions for option in action.option_strings}
        assert {"--model", "--weights"} <= flags, command


def test_evaluate_takes_model(tmp_path):
    """Each row's loss is the model's own teacher-forced cross-entropy of the reference, summed
    (sources of one length: how mixed lengths are batched is explorer/usermodel's business)."""
    model, vocab = homework_seq2seq.build(seed=5)
    weights = tmp_path / "w.pt"
    torch.save(model.state_dict(), weights)
    data = tmp_path / "pairs.tsv"
    pairs = [("a b c", "c b a"), ("d e f", "f e d"), ("g h a", "a h g")]
    data.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    rows = tmp_path / "rows.jsonl"
    assert main(["evaluate", "--model", HOMEWORK, "--weights", str(weights), "--data", str(data),
                 "--out", str(rows)]) == 0
    written = [json.loads(line) for line in rows.read_text().splitlines()]
    model.eval()
    ids = lambda text: [vocab.index(t) for t in text.split()]  # noqa: E731
    for (source, reference), row in zip(pairs, written):
        src = torch.tensor([ids(source + " <eos>")])
        target = ids(reference + " <eos>")
        with torch.no_grad():
            logits = model(src, torch.tensor([[vocab.index("<bos>")] + target[:-1]]))
        expected = torch.nn.functional.cross_entropy(logits[0].double(), torch.tensor(target),
                                                     reduction="sum")
        assert row["source"] == source and row["loss"] == pytest.approx(float(expected), abs=1e-4)


def test_fill_with_a_model_that_is_not_masked_is_one_line(capsys):
    assert main(["fill", "--model", HOMEWORK, "a [MASK] c"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("explorer fill: error: fill needs a masked language model") and "\n" not in err


@pytest.mark.parametrize("function, expected", [
    ("wrong_shape", "the model's forward returned logits of shape (2, 12); expected (B, T, V) "
                    "with V at least the tokenizer's 12 tokens"),
    ("small_embedding", "the tokenizer has 12 tokens but the model's embedding 'embed' has 5 rows"),
    ("wrong_types", "bad_models.py:wrong_types: returned the wrong types (model: expected a "
                    "torch.nn.Module, got str; tokenizer: expected a tokenizer or a vocabulary, "
                    "got int; adapter: expected explorer.Adapter, got dict)"),
])
@pytest.mark.parametrize("command", [["check"], ["decode", "a b"], ["score", "--target", "a b"]])
def test_bad_models_are_one_line_and_exit_2(function, expected, command, capsys):
    code = main([command[0], "--model", f"{BAD}:{function}", *command[1:]])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    assert err.startswith(f"explorer {command[0]}: error: ") and expected in err, err


def test_weights_for_another_model_are_one_line(tmp_path, capsys):
    other, _ = homework_seq2seq.build()
    weights = tmp_path / "other.pt"
    torch.save(other.state_dict(), weights)
    for command in (["check"], ["decode", "a"], ["train", "--task", "brackets", "--out",
                                                   str(tmp_path / "run")]):
        assert main([command[0], "--model", f"{BAD}:right", "--weights", str(weights),
                     *command[1:]]) == 2
        err = capsys.readouterr().err.strip()
        assert "other.pt: the weights do not fit the model (" in err and "\n" not in err
        assert "embed.weight (12, 16) vs (12, 8)" in err
    assert not (tmp_path / "run" / "model.safetensors").exists()


def test_data_that_does_not_fit_the_vocabulary_is_one_line(tmp_path, capsys):
    """The reverse task's letters run past the homework's vocabulary (a to h, words)."""
    assert main(["train", "--model", HOMEWORK, "--task", "reverse", "--steps", "2",
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    first = make_task("reverse").train[0][0]
    assert err.startswith("explorer train: error: the data does not fit the model: ")
    assert f"'{first}'" in err and "\n" not in err
    assert main(["train", "--model", HOMEWORK, "--task", "brackets", "--steps", "2",
                 "--out", str(tmp_path / "run")]) == 2
    assert "trains on (source, target) pairs, not lm data" in capsys.readouterr().err


def test_last_position_logits_cannot_train_and_check_says_how_to_fix_it(tmp_path, capsys):
    """nanoGPT-style logits of the last position only: decoding works, training is one line,
    and check marks what needs every position."""
    data = tmp_path / "text.txt"
    data.write_text("abc abd\nbad cab\n" * 20)
    assert main(["train", "--model", f"{BAD}:last_position", "--data", str(data), "--context", "8",
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert not (tmp_path / "run").exists()  # refused before a run folder is made
    assert err == ("explorer train: error: the model's forward gives logits at the last position "
                   "only; training needs every position: return them all (as nanoGPT's "
                   "forward(idx, targets) does when given targets, which the explorer passes), or "
                   "give Adapter(forward=...) that does")
    assert main(["check", "--model", f"{BAD}:last_position"]) == 1
    out = capsys.readouterr().out
    assert "(1, 1, 12) for inputs (1, 5) (1 of 5 positions)" in out
    for command in ("score", "evaluate", "train", "attribute"):
        line = next(line for line in out.splitlines() if line.split()[1:2] == [command])
        assert line.split()[0] == "fix" and "Adapter(forward=...)" in line
