"""A Hugging Face size below 1 (n_layer: -1) is one line naming the file and the field, for a
model folder and for `train --hf-config` alike: transformers builds a model without layers from it
and failed only when decoding ("__len__() should return >= 0")."""

from __future__ import annotations

import json
import shutil

from tests.test_cli_messages import one_line_error


def test_a_hugging_face_size_below_one_names_the_file_and_the_field(tmp_path, capsys, hf_models):
    folder = tmp_path / "gpt2"
    shutil.copytree(hf_models("gpt2"), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "n_layer": -1}))
    line = one_line_error(capsys, ["decode", "--checkpoint", str(folder), "the cat"])
    assert line == f"explorer decode: error: {folder / 'config.json'}: 'n_layer' must be a whole " \
                   "number >= 1, got -1"


def test_hf_config_for_a_new_model_names_the_file_and_the_field(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "gpt2", "n_layer": 2, "n_head": 0}))
    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox\n" * 50)
    line = one_line_error(capsys, ["train", "--data", str(text), "--hf-config", str(config),
                                   "--steps", "1", "--out", str(tmp_path / "o")])
    assert line == f"explorer train: error: {config}: 'n_head' must be a whole number >= 1, got 0"
