"""Crafted checkpoints: config.json fields of the wrong type, unknown or negative, TrainConfig
dictionaries, and model.safetensors files with forged headers or cut short. Each loads or fails
with a one-line UserError, and none makes the process allocate more than the file could hold."""

import json
import math
import resource
import shutil
import struct

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from explorer.cli import main
from explorer.errors import UserError
from explorer.training import TrainConfig, load_checkpoint, save_checkpoint
from tests.training.conftest import make_tiny_workspace

FUZZ = settings(max_examples=20, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
JSON_SCALARS = (st.none() | st.booleans() | st.integers(-2**40, 2**40)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                           max_leaves=6)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Pristine checkpoints of two families, copied before each crafted change."""
    root = tmp_path_factory.mktemp("saved")
    return {family: save_checkpoint(make_tiny_workspace(family), root / family)
            for family in ("gpt", "seq2seq")}


@pytest.fixture(scope="module", autouse=True)
def no_big_allocation():
    """Peak resident memory of the whole module grows by far less than any forged size."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    yield
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 600, f"peak memory grew by {grown_mb:.0f} MB"


def copy_of(saved, family, tmp_path):
    case = tmp_path / "case"
    shutil.rmtree(case, ignore_errors=True)
    return shutil.copytree(saved[family], case)


def loads_or_one_line_error(folder):
    try:
        return load_checkpoint(folder)
    except UserError as exc:
        assert "\n" not in str(exc) and str(folder) in str(exc), str(exc)
        return None


def edit_config(folder, change):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    change(config)
    path.write_text(json.dumps(config))


# -- config.json -----------------------------------------------------------------------------------

MODEL_FIELDS = ["vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "dropout", "max_len",
                "positional", "norm_first", "tie_weights", "family", "hidden_size", "cell"]


@FUZZ
@given(family=st.sampled_from(["gpt", "seq2seq"]),
       changes=st.dictionaries(st.sampled_from(MODEL_FIELDS + ["bogus"]), JSON_VALUES,
                               min_size=1, max_size=3))
@example(family="gpt", changes={"d_model": -64})
@example(family="gpt", changes={"max_len": 2**31})  # a 512 GiB positional table
@example(family="gpt", changes={"num_layers": 10**9})
@example(family="seq2seq", changes={"hidden_size": 2**30})
@example(family="gpt", changes={"dropout": "0.1"})
def test_model_config_fields_of_any_value(saved, tmp_path, family, changes):
    folder = copy_of(saved, family, tmp_path)
    edit_config(folder, lambda config: config["model"].update(changes))
    workspace = loads_or_one_line_error(folder)
    if workspace is not None:  # only harmless changes load, and the model then works
        assert workspace.model.config.family == family


@FUZZ
@given(section=st.sampled_from(["model", "train", "data", "tokenizers", "task", "step",
                                "data_digests", "format"]),
       value=JSON_VALUES)
@example(section="step", value=-3)
@example(section="train", value=5)
@example(section="data", value={"text": 5})
def test_config_sections_of_any_value(saved, tmp_path, section, value):
    folder = copy_of(saved, "seq2seq", tmp_path)
    edit_config(folder, lambda config: config.__setitem__(section, value))
    loads_or_one_line_error(folder)


@FUZZ
@given(data=st.binary(max_size=200))
def test_config_files_of_random_bytes(saved, tmp_path, data):
    folder = copy_of(saved, "gpt", tmp_path)
    (folder / "config.json").write_bytes(data)
    assert loads_or_one_line_error(folder) is None


TRAIN_FIELDS = ["optimizer", "lr", "steps", "epochs", "batch_size", "clip", "betas", "warmup",
                "context", "eval_every", "num_threads", "seed", "label_smoothing", "unknown_field"]


@FUZZ
@given(changes=st.dictionaries(st.sampled_from(TRAIN_FIELDS), JSON_VALUES, max_size=3))
@example(changes={"lr": "fast"})
@example(changes={"batch_size": 2.5})
@example(changes={"steps": True})
@example(changes={"betas": 5})
def test_train_config_dicts(changes):
    try:
        config = TrainConfig.from_dict(changes)
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert TrainConfig.from_dict(config.to_dict()) == config
    for name in ("batch_size", "warmup", "eval_every", "context", "seed"):
        value = getattr(config, name)
        assert isinstance(value, int) and not isinstance(value, bool), (name, value)
    assert isinstance(config.lr, (int, float)) and math.isfinite(config.lr)


# -- model.safetensors -----------------------------------------------------------------------------


def forge(folder, change_header=None, data=None):
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    length = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + length])
    if change_header is not None:
        change_header(header)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + (raw[8 + length:] if data is None
                                                                  else data))


def first_tensor(header):
    return next(name for name in sorted(header) if name != "__metadata__")


FORGERIES = {
    "huge header length": lambda f: (f / "model.safetensors").write_bytes(
        struct.pack("<Q", 2**62) + b"{}"),
    "huge tensor": lambda f: forge(f, lambda h: h[first_tensor(h)].update(
        shape=[2**20, 2**20], data_offsets=[0, 4 * 2**40])),
    "size and shape disagree": lambda f: forge(f, lambda h: h[first_tensor(h)].update(
        shape=[10**6])),
    "wrong dtype": lambda f: forge(f, lambda h: h[first_tensor(h)].update(dtype="I32")),
    "unknown dtype": lambda f: forge(f, lambda h: h[first_tensor(h)].update(dtype="F128")),
    "negative offsets": lambda f: forge(f, lambda h: h[first_tensor(h)].update(
        data_offsets=[-8, 0])),
    "extra tensor": lambda f: forge(f, lambda h: h.update(
        extra={"dtype": "F32", "shape": [0], "data_offsets": [0, 0]})),
    "missing tensor": lambda f: forge(f, lambda h: h.pop(first_tensor(h))),
    "header not JSON": lambda f: (f / "model.safetensors").write_bytes(
        struct.pack("<Q", 4) + b"{{{{" + b"\0" * 64),
    "config disagrees": lambda f: edit_config(f, lambda c: c["model"].update(d_model=128)),
    "vocabulary disagrees": lambda f: edit_config(f, lambda c: c["model"].update(vocab_size=99)),
    "empty file": lambda f: (f / "model.safetensors").write_bytes(b""),
    "no file": lambda f: (f / "model.safetensors").unlink(),
    # and the files beside the weights
    "negative size": lambda f: edit_config(f, lambda c: c["model"].update(d_ff=-128)),
    "unknown field": lambda f: edit_config(f, lambda c: c["model"].update(colour="blue")),
    "tokenizer of random bytes": lambda f: (f / "tgt_tokenizer.json").write_bytes(b"\x93\x00{"),
    "metrics of random bytes": lambda f: (f / "metrics.jsonl").write_bytes(b"\xff\n{}\n"),
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_forged_weights_fail_in_one_line(saved, tmp_path, forgery):
    folder = copy_of(saved, "gpt", tmp_path)
    FORGERIES[forgery](folder)
    with pytest.raises(UserError) as info:
        load_checkpoint(folder)
    assert "\n" not in str(info.value) and str(folder) in str(info.value)


@FUZZ
@given(cut=st.floats(0, 1, exclude_max=True), family=st.sampled_from(["gpt", "seq2seq"]))
def test_a_weights_file_cut_anywhere_fails_in_one_line(saved, tmp_path, cut, family):
    folder = copy_of(saved, family, tmp_path)
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    path.write_bytes(raw[:int(cut * len(raw))])
    with pytest.raises(UserError, match="model.safetensors"):
        load_checkpoint(folder)


@FUZZ
@given(data=st.binary(min_size=8, max_size=300))
def test_weights_files_of_random_bytes(saved, tmp_path, data):
    folder = copy_of(saved, "gpt", tmp_path)
    (folder / "model.safetensors").write_bytes(data)
    assert loads_or_one_line_error(folder) is None


# -- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize("forgery", ["huge tensor", "wrong dtype", "config disagrees",
                                     "empty file", "negative size", "tokenizer of random bytes"])
def test_cli_commands_answer_a_forged_checkpoint_with_exit_2(saved, tmp_path, capsys, forgery):
    folder = copy_of(saved, "gpt", tmp_path)
    FORGERIES[forgery](folder)
    for argv in (["decode", "--checkpoint", str(folder), "abc"],
                 ["train", "--resume", str(folder), "--steps", "1", "--device", "cpu"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"explorer {argv[0]}: error: ")
