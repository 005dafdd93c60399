"""`explorer attribute`: per output token the attributions over source and prefix, as JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from explorer.cli import main


def _run(capsys, *argv):
    code = main(["attribute", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ig_json_matches_the_core_and_carries_the_gap(reverse_checkpoint, capsys):
    from explorer.analysis.attribution import AttributionSettings, attribute
    from explorer.commands.model_args import load_workspace

    code, out, _ = _run(capsys, "--checkpoint", str(reverse_checkpoint), "--source", "abc",
                        "--target", "cba", "--method", "ig", "--steps", "30", "--baseline", "zero",
                        "--json")
    assert code == 0
    document = json.loads(out)
    expected = attribute(load_workspace(str(reverse_checkpoint)), "abc", "cba",
                         AttributionSettings(method="ig", steps=30, baseline="zero"))
    assert document["sides"] == ["source", "prefix"] and document["source"] == ["a", "b", "c", "<eos>"]
    assert [entry["token"] for entry in document["outputs"]] == ["c", "b", "a", "<eos>"]
    for r, entry in enumerate(document["outputs"]):
        assert len(entry["prefix"]) == r + 1  # <bos> and the tokens before it
        np.testing.assert_allclose(entry["source"] + entry["prefix"],
                                   expected.scores[r][~np.isnan(expected.scores[r])], atol=1e-6)
        total = sum(entry["source"]) + sum(entry["prefix"])
        assert entry["gap"] == pytest.approx(total - (entry["target"] - entry["baseline_target"]), abs=1e-6)


def test_ig_tolerance_reports_each_token_s_steps_beside_its_gap(reverse_checkpoint, capsys):
    from explorer.analysis.attribution_input import attribution_input
    from explorer.commands.model_args import load_workspace
    from seqmodels.config import PAD_ID
    from tests.attribution_reference import embedding_forward

    code, out, _ = _run(capsys, "--checkpoint", str(reverse_checkpoint), "--source", "abc",
                        "--target", "cba", "--method", "ig", "--tolerance", "0.01", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["tolerance"] == 0.01
    workspace = load_workspace(str(reverse_checkpoint))
    model = workspace.model.eval()
    modules = [model.src_embed.token, model.tgt_embed.token]
    item = attribution_input(workspace, "abc", "cba")
    for entry, row in zip(document["outputs"], item.rows, strict=True):
        assert entry["steps"] in (5, 9, 17, 33, 65, 129)
        forward = embedding_forward(model, item.inputs, modules, row.position, row.token_id)
        with torch.no_grad():  # f(x) and f(<pad> embeddings) from the model itself
            change = (forward(*[m(t) for m, t in zip(modules, item.inputs)])
                      - forward(*[m(torch.full_like(t, PAD_ID)) for m, t in zip(modules, item.inputs)])).item()
        total = sum(entry["source"]) + sum(entry["prefix"])
        assert abs(total - change) <= 0.01 * abs(change)
    code, out, _ = _run(capsys, "--checkpoint", str(reverse_checkpoint), "--source", "abc",
                        "--target", "cba", "--method", "ig", "--tolerance", "0.01")
    assert code == 0 and " steps)" in out.splitlines()[0]


@pytest.mark.parametrize("method", ["saliency", "grad-input", "occlusion"])
def test_other_methods_print_one_entry_per_output_token(reverse_checkpoint, capsys, method):
    code, out, _ = _run(capsys, "--checkpoint", str(reverse_checkpoint), "--source", "ab",
                        "--target", "ba", "--method", method, "--contrast", "a", "--json")
    document = json.loads(out)
    assert code == 0 and document["contrast"] == "a" and len(document["outputs"]) == 3
    assert all("gap" not in entry for entry in document["outputs"])


def test_rollout_json_rows_sum_to_one(reverse_checkpoint, capsys):
    code, out, _ = _run(capsys, "--checkpoint", str(reverse_checkpoint), "--source", "abc",
                        "--method", "rollout", "--json")
    document = json.loads(out)
    assert code == 0 and [m["name"] for m in document["maps"]] == ["encoder", "decoder", "decoder → source"]
    for m in document["maps"]:
        np.testing.assert_allclose(np.sum(m["matrix"], axis=1), 1.0, atol=1e-6)


def test_flow_json_and_text_match_the_core(reverse_checkpoint, capsys):
    from explorer.analysis.attention_flow import CROSS_NOTE, attention_flow
    from explorer.commands.model_args import load_workspace

    argv = ["--checkpoint", str(reverse_checkpoint), "--source", "abc", "--target", "cba", "--method", "flow",
            "--fusion", "max"]
    code, out, _ = _run(capsys, *argv, "--json")
    document = json.loads(out)
    assert code == 0 and document["method"] == "flow" and document["note"] == CROSS_NOTE
    workspace = load_workspace(str(reverse_checkpoint))
    expected = attention_flow(workspace, "abc", "cba", "max")
    assert [m["name"] for m in document["maps"]] == ["encoder", "decoder"]
    for m, e in zip(document["maps"], expected.maps):
        np.testing.assert_allclose(m["matrix"], e.matrix, atol=1e-9)
    code, out, _ = _run(capsys, *argv)
    assert code == 0 and "encoder (flow, head fusion max):" in out and f"note: {CROSS_NOTE}" in out


@pytest.mark.parametrize("argv, message", [
    (["--steps", "0"], "at least 1 step"),
    (["--contrast", "no-such-token"], "not in the model's vocabulary"),
    (["--steps", "20", "--tolerance", "0.01"], "give one of them"),
    (["--tolerance", "1.5"], "between 0 and 1"),
])
def test_bad_input_is_one_line(reverse_checkpoint, capsys, argv, message):
    code, out, err = _run(capsys, "--checkpoint", str(reverse_checkpoint), "--source", "abc", *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
