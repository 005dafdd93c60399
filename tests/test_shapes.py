"""explorer.shapes: a model built for its shapes on the meta device, without initialising it, has
the shapes and dtypes of one built normally; real tensors are initialised as ever meanwhile."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
import torch.nn.init as init

from explorer.families import get_family
from explorer.shapes import shapes_only, skipping_init
from seqmodels import build_model, make_config


CONFIGS = [("rnn-lm", {}), ("seq2seq", {"cell": "ugrnn"}), ("transformer", {}), ("gpt", {}),
           ("gpt", {"positional": "rope"}), ("gpt", {"positional": "learned"}), ("bert", {})]


def config_of(family, options):
    sizes = {"vocab_size": 40, **({"src_vocab_size": 30} if get_family(family).has_source else {})}
    return make_config(family, "tiny", **sizes, **options)


@pytest.mark.parametrize(("family", "options"), CONFIGS)
def test_the_shapes_are_those_of_a_model_built_normally(family, options):
    config = config_of(family, options)
    with shapes_only():
        model = build_model(config)
    shapes = {**dict(model.named_parameters()), **dict(model.named_buffers())}  # tables too
    built = build_model(config)
    expected = {**dict(built.named_parameters()), **dict(built.named_buffers())}
    assert shapes.keys() == expected.keys()
    for name, tensor in expected.items():
        assert shapes[name].is_meta and shapes[name].shape == tensor.shape, name
        assert shapes[name].dtype == tensor.dtype, name


def test_building_for_shapes_does_not_import_torch_dynamo():
    """Checking a checkpoint (every CLI command, the app's demo) took 2.5-4.6 s for that import."""
    script = (
        "import sys\n"
        "from tests.test_shapes import CONFIGS, config_of\n"
        "from explorer.shapes import shapes_only\n"
        "from seqmodels import build_model\n"
        "for family, options in CONFIGS:\n"
        "    with shapes_only():\n"
        "        build_model(config_of(family, options))\n"
        "print('torch._dynamo' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).resolve().parent.parent, check=False)
    assert result.stdout.strip() == "False", result.stderr[-2000:]


def test_only_meta_tensors_are_skipped_in_any_thread_and_the_functions_come_back():
    normal, linear_init = init.normal_, torch.nn.modules.linear.init
    real = {}

    def build_elsewhere():  # another thread builds a real model while the block is active
        torch.manual_seed(0)
        real["weight"] = torch.nn.Linear(64, 64).weight.detach().clone()

    with pytest.raises(RuntimeError), skipping_init():
        meta = torch.empty(3, device="meta")
        assert init.normal_(meta) is meta
        worker = threading.Thread(target=build_elsewhere)
        worker.start()
        worker.join()
        raise RuntimeError("a build failed")
    assert init.normal_ is normal and torch.nn.modules.linear.init is linear_init
    torch.manual_seed(0)
    assert torch.equal(real["weight"], torch.nn.Linear(64, 64).weight)  # kaiming, not empty memory
