"""`explorer decode` and `explorer score` on small checkpoints written by save_checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from explorer.cli import main
from explorer.data.tokenizers import CharTokenizer, WordTokenizer
from explorer.training.checkpoint import save_checkpoint
from explorer.workspace import Workspace
from seqmodels.config import BOS_ID, EOS_ID, MASK_ID, PAD_ID, UNK_ID, build_model, make_config

SOURCES = ["the cat sat on the mat", "a dog ran", "the bird sang a song on the tree"]
TARGETS = ["le chat assis sur le tapis", "un chien courait", "l oiseau chantait une chanson"]
LM_TEXT = ["abc abd abba", "dab cab bad"]

# tiny models: a second intra-op thread only adds contention on a shared 2-core machine
torch.set_num_threads(1)


def _save(workspace, folder):
    return str(save_checkpoint(workspace, folder, optimizer=False))


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    src_tok, tgt_tok = WordTokenizer.train(SOURCES), WordTokenizer.train(TARGETS)
    torch.manual_seed(0)
    transformer = build_model(make_config(
        "transformer", "tiny", vocab_size=tgt_tok.vocab_size, src_vocab_size=src_tok.vocab_size,
        max_len=40,
    ))
    seq2seq = build_model(make_config(
        "seq2seq", "tiny", vocab_size=tgt_tok.vocab_size, src_vocab_size=src_tok.vocab_size,
    ))
    with torch.no_grad():  # real words or <eos> only, so that texts round-trip through `score`
        seq2seq.head.bias[[PAD_ID, BOS_ID, UNK_ID, MASK_ID]] = -50.0
        seq2seq.head.bias[EOS_ID] += 2.0
    char_tok = CharTokenizer.train(LM_TEXT)
    gpt = build_model(make_config("gpt", "tiny", vocab_size=char_tok.vocab_size, max_len=32))
    return {
        "transformer": _save(Workspace(transformer, tgt_tok, src_tok), root / "transformer"),
        "seq2seq": _save(Workspace(seq2seq, tgt_tok, src_tok), root / "seq2seq"),
        "gpt": _save(Workspace(gpt, char_tok), root / "gpt"),
    }


def cli_json(capsys, *args):
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_score_matches_cross_entropy_of_forward(checkpoints, capsys):
    from explorer.training.checkpoint import load_checkpoint

    result = cli_json(capsys, "score", "--checkpoint", checkpoints["transformer"],
                      "--source", SOURCES[0], "--target", TARGETS[0], "--json")
    ws = load_checkpoint(checkpoints["transformer"])
    src = torch.tensor([ws.src_tokenizer.encode(SOURCES[0]) + [EOS_ID]])
    target = ws.tokenizer.encode(TARGETS[0]) + [EOS_ID]
    with torch.no_grad():
        logits = ws.model(src, torch.tensor([[BOS_ID] + target[:-1]]))[0]  # (T, V)
    expected = -F.cross_entropy(logits, torch.tensor(target), reduction="none")
    assert result["tokens"] == TARGETS[0].split() + ["<eos>"]
    np.testing.assert_allclose(result["logprobs"], expected.numpy(), atol=1e-4)
    assert result["total"] == pytest.approx(sum(result["logprobs"]))


def test_beam_hypotheses_score_like_explorer_score(checkpoints, capsys):
    out = cli_json(capsys, "decode", "--checkpoint", checkpoints["seq2seq"], "--beam", "4",
                   "--nbest", "3", "--max-len", "12", "--length-penalty", "0.6", "--json", SOURCES[1])
    hypotheses = out["hypotheses"]
    assert len(hypotheses) == 3 and out["source"] == SOURCES[1]
    normalized = [h["normalized_score"] for h in hypotheses]
    assert normalized == sorted(normalized, reverse=True)
    for hyp in hypotheses:
        assert hyp["tokens"][-1] == "<eos>"
        scored = cli_json(capsys, "score", "--checkpoint", checkpoints["seq2seq"], "--source",
                          SOURCES[1], "--target", hyp["text"], "--json")
        assert scored["tokens"] == hyp["tokens"]
        assert scored["total"] == pytest.approx(hyp["score"], abs=1e-4)
        np.testing.assert_allclose(scored["logprobs"], hyp["token_logprobs"], atol=1e-4)
    nodes = out["tree"]["nodes"]
    assert {n["status"] for n in nodes[1:]} <= {"kept", "pruned", "finished"}
    assert all(n["attention"] is not None for n in nodes[1:])


def test_attention_entries_agree_with_the_tree(checkpoints, capsys):
    out = cli_json(capsys, "decode", "--checkpoint", checkpoints["transformer"], "--beam", "3",
                   "--max-len", "6", "--json", SOURCES[0])
    best = out["hypotheses"][0]
    entries = out["attention"]
    assert sorted({(e["kind"], e["layer"]) for e in entries}) == sorted(
        (kind, layer) for kind in ("encoder", "decoder", "cross") for layer in (0, 1)
    )
    assert len(entries) == 3 * 2 * 4  # kinds x layers x heads
    source_tokens = SOURCES[0].split() + ["<eos>"]
    assert out["source_tokens"] == source_tokens
    nodes = out["tree"]["nodes"]
    leaf = next(n for n in nodes if n["status"] == "finished" and _path(nodes, n) == best["token_ids"])
    chain = [n for n in _chain(nodes, leaf)]
    for entry in entries:
        weights = np.asarray(entry["weights"])
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
        if entry["kind"] == "cross":
            assert entry["rows"] == best["tokens"] and entry["cols"] == source_tokens
            # the teacher-forced map equals what each tree node looked at while searching
            for position, node in enumerate(chain):
                step_row = np.asarray(node["attention"])[entry["layer"], entry["head"]]
                np.testing.assert_allclose(weights[position], step_row, atol=1e-4)


def _chain(nodes, leaf):
    chain = [leaf]
    while chain[-1]["parent"] not in (None, 0):
        chain.append(nodes[chain[-1]["parent"]])
    return chain[::-1]


def _path(nodes, leaf):
    return [n["token_id"] for n in _chain(nodes, leaf)]


def test_greedy_text_and_input_file(checkpoints, capsys, tmp_path):
    assert main(["decode", "--checkpoint", checkpoints["seq2seq"], *SOURCES]) == 0
    greedy_lines = capsys.readouterr().out.splitlines()
    assert len(greedy_lines) == 3
    beam1 = [cli_json(capsys, "decode", "--checkpoint", checkpoints["seq2seq"], "--beam", "1",
                      "--json", s)["hypotheses"][0]["text"] for s in SOURCES]
    assert greedy_lines == beam1
    inputs = tmp_path / "sources.txt"
    inputs.write_text("\n".join(SOURCES) + "\n")
    records = cli_json(capsys, "decode", "--checkpoint", checkpoints["seq2seq"], "--greedy",
                       "--json", "--input", str(inputs))
    assert [r["hypotheses"][0]["text"] for r in records] == greedy_lines
    assert all(r["tree"]["nodes"][-1]["status"] == "finished" for r in records)


def test_nbest_text_mode_prints_scores(checkpoints, capsys):
    assert main(["decode", "--checkpoint", checkpoints["seq2seq"], "--beam", "3", "--nbest", "2",
                 SOURCES[0], SOURCES[2]]) == 0
    header, *rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert header == ["source", "rank", "score", "logprob", "hypothesis"]
    assert [(row[0], row[1]) for row in rows] == [(SOURCES[0], "1"), (SOURCES[0], "2"),
                                                  (SOURCES[2], "1"), (SOURCES[2], "2")]
    for best, second in (rows[:2], rows[2:]):
        assert float(best[2]) >= float(second[2])
        assert len(best) == 5 and float(best[3]) <= 0  # its log-probability, then its text


def test_language_model_sample_and_score(checkpoints, capsys):
    first = cli_json(capsys, "decode", "--checkpoint", checkpoints["gpt"], "--sample", "--seed",
                     "3", "--top-p", "0.9", "--max-len", "8", "--json", "ab")
    again = cli_json(capsys, "decode", "--checkpoint", checkpoints["gpt"], "--sample", "--seed",
                     "3", "--top-p", "0.9", "--max-len", "8", "--json", "ab")
    assert first["hypotheses"] == again["hypotheses"]
    for step in first["samples"]:
        assert step["chosen"] in step["token_ids"]
        assert sum(step["probs"]) == pytest.approx(1.0)
    assert {e["kind"] for e in first["attention"]} == {"decoder"}
    scored = cli_json(capsys, "score", "--checkpoint", checkpoints["gpt"], "--target", "abba", "--json")
    assert scored["tokens"] == ["a", "b", "b", "a", "<eos>"]
    assert scored["total"] == pytest.approx(sum(scored["logprobs"])) and scored["total"] < 0


@pytest.mark.parametrize("args,message", [
    (["--nbest", "2", "x"], "--nbest needs --beam"),
    (["--beam", "0", "x"], "--beam must be at least 1"),
    (["--sample", "--temperature", "0", "x"], "--temperature must be positive"),
    (["--threads", "0", "x"], "--threads must be at least 1"),
    ([], "nothing to decode"),
])
def test_bad_options_are_one_line_errors(checkpoints, capsys, args, message):
    assert main(["decode", "--checkpoint", checkpoints["gpt"], *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_checkpoint_and_missing_source(checkpoints, capsys, tmp_path):
    assert main(["decode", "--checkpoint", str(tmp_path / "nowhere"), "hello"]) == 2
    assert "nowhere" in capsys.readouterr().err
    assert main(["score", "--checkpoint", checkpoints["transformer"], "--target", "le chat"]) == 2
    assert "needs a source" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["decode", "--greedy", "abc"], ["decode", "--beam", "2", "--json", "abc"], ["decode", "--sample", "abc"],
    ["score", "--target", "abc"],
])
def test_a_bert_checkpoint_cannot_decode_or_score_left_to_right(capsys, tmp_path, command):
    tokenizer = CharTokenizer.train(LM_TEXT)
    bert = build_model(make_config("bert", "tiny", vocab_size=tokenizer.vocab_size, max_len=32))
    folder = _save(Workspace(bert, tokenizer), tmp_path / "bert")
    assert main([command[0], "--checkpoint", folder, *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"explorer {command[0]}: error: a bert model is a masked language model")
    assert len(err.strip().splitlines()) == 1


def test_input_file_streams_each_hypothesis_so_a_killed_run_keeps_what_it_finished(tmp_path):
    import subprocess
    import sys

    src_tok, tgt_tok = WordTokenizer.train(SOURCES), WordTokenizer.train(TARGETS)
    torch.manual_seed(0)
    model = build_model(make_config("seq2seq", "tiny", vocab_size=tgt_tok.vocab_size,
                                    src_vocab_size=src_tok.vocab_size))
    with torch.no_grad():  # never <eos>: every hypothesis runs to --max-len, so the run is long
        model.head.bias[[PAD_ID, BOS_ID, EOS_ID, UNK_ID, MASK_ID]] = -50.0
    checkpoint = _save(Workspace(model, tgt_tok, src_tok), tmp_path / "endless")
    sources = tmp_path / "many.txt"
    sources.write_text("\n".join(SOURCES * 400) + "\n")  # 1200 lines, 75 chunks of 16
    command = [sys.executable, "-m", "explorer", "decode", "--checkpoint", checkpoint,
               "--max-len", "100", "--input", str(sources)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        finished = [process.stdout.readline() for _ in range(16)]  # the first chunk
        assert process.poll() is None  # it came long before the end
    finally:
        process.kill()
    finished += process.stdout.read().splitlines(keepends=True)
    process.wait()
    finished = [line for line in finished if line.endswith("\n")]  # whole lines only
    expected = subprocess.run([*command[:-2], *SOURCES], capture_output=True, text=True, timeout=60)
    expected = expected.stdout.splitlines(keepends=True)
    assert len(expected) == 3 and len(expected[0].split()) == 100  # no <eos> within --max-len
    assert finished == [expected[i % 3] for i in range(len(finished))]
    assert process.stderr.read() == ""  # stderr is no terminal here: no progress drawn


def test_progress_is_drawn_on_a_terminal_only():
    import io

    from explorer.commands.decode import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = Progress(32, stream)
        progress.update(16)
        progress.update(32)
        progress.close()
    assert terminal.getvalue().startswith("\rdecoded 16/32 (")
    assert "\rdecoded 32/32 (" in terminal.getvalue() and terminal.getvalue().endswith("left)\n")
    assert pipe.getvalue() == ""
