"""explorer.shapes: a model built for its shapes on the meta device, without initialising it, has
the shapes and dtypes of one built normally; real tensors are initialised as ever meanwhile."""

from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.init as init

from explorer.shapes import shapes_only, skipping_init
from seqmodels import build_model, make_config


@pytest.mark.parametrize("family", ["rnn-lm", "seq2seq", "transformer", "gpt", "bert"])
def test_the_shapes_are_those_of_a_model_built_normally(family):
    sizes = {"vocab_size": 40, **({"src_vocab_size": 30} if family in ("seq2seq", "transformer") else {})}
    config = make_config(family, "tiny", **sizes)
    with shapes_only():
        shapes = build_model(config).state_dict()
    built = build_model(config).state_dict()
    assert shapes.keys() == built.keys()
    for name, tensor in built.items():
        assert shapes[name].is_meta and shapes[name].shape == tensor.shape, name
        assert shapes[name].dtype == tensor.dtype, name


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
