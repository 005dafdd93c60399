"""`explorer export` on a Hugging Face folder: every panel that applies is rendered, those that do
not say so in one line (no data: no curves, no validation BLEU)."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("transformers")
import torch  # noqa: E402


def test_export_renders_t5_panels_with_its_relative_bias(hf_models, hf_workspace, tmp_path):
    out = tmp_path / "export"
    done = subprocess.run(
        [sys.executable, "-m", "explorer", "export", "--checkpoint", str(hf_models("t5")),
         "--out", str(out), "--plots", "positional,gradients,bleu", "--format", "csv"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "bleu: nothing to draw for this model, skipped" in done.stderr
    assert "Traceback" not in done.stderr
    with open(out / "positional_relative_bias.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    matrix = np.array([[float(v) for v in row[1:]] for row in rows])
    attention = hf_workspace("t5").model.hf.encoder.block[0].layer[0].SelfAttention
    with torch.no_grad():
        expected = attention.compute_bias(len(matrix), len(matrix))[0, 0].numpy()  # head 1
    np.testing.assert_allclose(matrix, expected, atol=1e-6)
    assert (out / "gradients_params.csv").exists()
