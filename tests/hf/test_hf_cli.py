"""`explorer decode / score / fill` on Hugging Face folders, and one-line errors (exit 2)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

from explorer.cli import main  # noqa: E402


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *words):
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


def test_decode_json_beam_on_marian(hf_models, capsys):
    code, out, _ = run_cli(capsys, "decode", "--checkpoint", str(hf_models("marian")), "--beam", "3",
                           "--length-penalty", "0", "--max-len", "6", "--json", "the cat sat")
    assert code == 0
    record = json.loads(out)
    best = record["hypotheses"][0]
    assert best["score"] == pytest.approx(sum(best["token_logprobs"]), abs=1e-9)
    assert len(best["token_ids"]) <= 6 and best["score"] >= record["greedy"]["score"] - 1e-5
    kinds = {(entry["kind"], entry["layer"], entry["head"]) for entry in record["attention"]}
    assert kinds == {(k, layer, head) for k in ("encoder", "decoder", "cross")
                     for layer in range(2) for head in range(4)}
    cross = next(e for e in record["attention"] if e["kind"] == "cross")
    assert len(cross["weights"]) == len(cross["rows"]) == len(best["token_ids"])
    assert len(cross["weights"][0]) == len(cross["cols"])


def test_decode_greedy_gpt2_and_score(hf_models, hf_workspace, capsys):
    folder = str(hf_models("gpt2"))
    code, out, _ = run_cli(capsys, "decode", "--checkpoint", folder, "--max-len", "5", "--json", "the cat")
    assert code == 0
    best = json.loads(out)["hypotheses"][0]
    assert len(best["token_ids"]) == 5 and best["score"] == pytest.approx(sum(best["token_logprobs"]))
    text = hf_workspace("gpt2").tokenizer.decode(best["token_ids"])
    code, out, _ = run_cli(capsys, "score", "--checkpoint", folder, "--source", "the cat",
                           "--target", text, "--json")
    assert code == 0
    scored = json.loads(out)  # the same tokens, then <|endoftext|>: the same log-probs before it
    if hf_workspace("gpt2").tokenizer.encode(text) == best["token_ids"]:
        assert scored["logprobs"][:5] == pytest.approx(best["token_logprobs"], abs=1e-5)


def test_fill_command(hf_models, capsys):
    code, out, _ = run_cli(capsys, "fill", "--checkpoint", str(hf_models("bert")),
                           "the [MASK] sat on the mat", "--top-k", "5", "--json")
    assert code == 0
    result = json.loads(out)
    assert len(result["masks"]) == 1 and len(result["masks"][0]["predictions"]) == 5
    probs = [p["prob"] for p in result["masks"][0]["predictions"]]
    assert probs == sorted(probs, reverse=True)
    code, _, err = run_cli(capsys, "fill", "--checkpoint", str(hf_models("gpt2")), "the [MASK] sat")
    assert_one_line_error(code, err, "masked language model")


def _edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def test_bad_folders_are_one_line_errors(hf_models, tmp_path, capsys):
    source = hf_models("gpt2")
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    (not_a_model / "notes.txt").write_text("hello")
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(not_a_model), "hi")
    assert_one_line_error(code, err, "not a checkpoint")

    unknown = tmp_path / "unknown"
    shutil.copytree(source, unknown)
    _edit_config(unknown, model_type="no-such-model")
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(unknown), "hi")
    assert_one_line_error(code, err, "unknown model_type", "no-such-model")

    remote = tmp_path / "remote"
    shutil.copytree(source, remote)
    _edit_config(remote, auto_map={"AutoModelForCausalLM": "modeling_evil.EvilModel"})
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(remote), "hi")
    assert_one_line_error(code, err, "trust_remote_code")

    no_tokenizer = tmp_path / "no-tokenizer"
    shutil.copytree(source, no_tokenizer)
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        (no_tokenizer / name).unlink(missing_ok=True)
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(no_tokenizer), "hi")
    assert_one_line_error(code, err, "no tokenizer files")

    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(source), "the cat " * 40)
    assert_one_line_error(code, err, "more than the model reads (64 at most)")
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(hf_models("marian")), "the cat " * 40)
    assert_one_line_error(code, err, "more than the model reads (64 at most)")


def test_missing_extra_names_the_install(hf_models, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` fails
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(hf_models("gpt2")), "hi")
    assert_one_line_error(code, err, 'pip install -e ".[hf]"')


def test_bin_weights_load_with_weights_only(hf_models, tmp_path, capsys):
    """A pytorch_model.bin is read through the weights-only unpickler: a pickle that runs code is refused."""
    import torch
    from transformers import AutoModelForCausalLM

    from explorer.hf import open_hf_model

    folder = tmp_path / "bin"
    shutil.copytree(hf_models("gpt2"), folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    workspace = open_hf_model(folder)
    assert torch.equal(workspace.model.hf.transformer.wte.weight, model.transformer.wte.weight)

    class Evil:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    torch.save({"weights": Evil()}, folder / "pytorch_model.bin")
    code, _, err = run_cli(capsys, "decode", "--checkpoint", str(folder), "hi")
    assert_one_line_error(code, err, f"{folder / 'pytorch_model.bin'}: refused: it holds Python "
                                     "objects (posix.system)")
    assert "weights_only" not in err  # torch's advice to load it anyway is never passed on
    assert not (tmp_path / "pwned").exists()


def test_cached_model_id_opens_offline(hf_models, tmp_path, monkeypatch, capsys):
    """A model id in the local cache (HF_HUB_CACHE) opens by name, with the network off."""
    cache = tmp_path / "hub"
    snapshot = cache / "models--tiny--gpt2" / "snapshots" / "0123abcd"
    shutil.copytree(hf_models("gpt2"), snapshot)
    (cache / "models--tiny--gpt2" / "refs").mkdir()
    (cache / "models--tiny--gpt2" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    code, out, err = run_cli(capsys, "decode", "--checkpoint", "tiny/gpt2", "--max-len", "3",
                             "--json", "the cat")
    assert code == 0, err
    assert len(json.loads(out)["hypotheses"][0]["token_ids"]) == 3
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    code, _, err = run_cli(capsys, "decode", "--checkpoint", "tiny/absent", "hi")
    assert_one_line_error(code, err, "tiny/absent")


def test_a_bad_config_field_and_a_missing_vocabulary_name_the_file(hf_models, tmp_path, capsys):
    """`n_layer: "two"` names config.json and the field; a Marian folder without vocab.json names
    the file (it said "expected str, bytes or os.PathLike object, not NoneType")."""
    import json
    import shutil

    gpt2 = tmp_path / "gpt2"
    shutil.copytree(hf_models("gpt2"), gpt2)
    config = json.loads((gpt2 / "config.json").read_text())
    (gpt2 / "config.json").write_text(json.dumps({**config, "n_layer": "two"}))
    assert main(["decode", "--checkpoint", str(gpt2), "hello"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{gpt2 / 'config.json'}: " in err and "'n_layer' expected int, got str (value: 'two')" in err
    marian = tmp_path / "marian"
    shutil.copytree(hf_models("marian"), marian)
    (marian / "vocab.json").unlink()
    assert main(["decode", "--checkpoint", str(marian), "hello"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the folder lacks vocab.json" in err and "MarianTokenizer" in err


def test_hf_commands_print_no_futurewarning_of_transformers(hf_models):
    """transformers 5.24 warned twice per decode that `past_key_values` is deprecated."""
    result = subprocess.run([sys.executable, "-m", "explorer", "decode", "--checkpoint",
                             str(hf_models("marian")), "--beam", "2", "the cat"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "FutureWarning" not in result.stderr and "deprecated" not in result.stderr
