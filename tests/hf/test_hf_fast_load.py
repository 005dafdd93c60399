"""explorer.hf.fast_load: opening a folder without torch's initialisation of the weights it is
about to overwrite gives the model transformers' own from_pretrained gives."""

from __future__ import annotations

import pytest
import torch

from explorer.hf.fast_load import from_pretrained

AUTO_CLASSES = {"gpt2": "AutoModelForCausalLM", "bert": "AutoModelForMaskedLM",
                "distilbert": "AutoModelForMaskedLM", "marian": "AutoModelForSeq2SeqLM",
                "t5": "AutoModelForSeq2SeqLM"}


def assert_same_model(ours, theirs):
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert ours_state.keys() == theirs_state.keys()
    for name, tensor in theirs_state.items():  # parameters and buffers (Marian's sinusoid too)
        assert torch.equal(ours_state[name], tensor), name
    for (name, ours_buffer), (_, theirs_buffer) in zip(ours.named_buffers(), theirs.named_buffers()):
        assert torch.equal(ours_buffer, theirs_buffer), name  # non-persistent ones as well


@pytest.mark.parametrize("name", sorted(AUTO_CLASSES))
def test_the_model_is_the_one_from_pretrained_gives(hf_models, name):
    import transformers

    auto_class = getattr(transformers, AUTO_CLASSES[name])
    folder = str(hf_models(name))
    assert_same_model(from_pretrained(auto_class, folder), auto_class.from_pretrained(folder))


def test_a_weight_the_folder_lacks_gets_its_real_initialisation(hf_models, tmp_path):
    """A checkpoint without one of GPT-2's layers: transformers initialises it (normal, std 0.02)
    through its own functions, which are not skipped, so it is never left as whatever memory
    held; every other weight is the folder's."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM

    source = hf_models("gpt2")
    folder = tmp_path / "gpt2-missing"
    folder.mkdir()
    for path in source.iterdir():
        if path.is_file() and path.name != "model.safetensors":
            (folder / path.name).write_bytes(path.read_bytes())
    weights = load_file(source / "model.safetensors")
    dropped = "transformer.h.1.mlp.c_fc.weight"
    save_file({k: v for k, v in weights.items() if k != dropped}, folder / "model.safetensors",
              metadata={"format": "pt"})
    state = from_pretrained(AutoModelForCausalLM, str(folder)).state_dict()
    for name, tensor in AutoModelForCausalLM.from_pretrained(str(folder)).state_dict().items():
        assert name == dropped or torch.equal(state[name], tensor), name
    weight = state[dropped]  # random: its statistics, not its values, are transformers' own
    assert torch.isfinite(weight).all() and abs(float(weight.mean())) < 0.005
    assert 0.015 < float(weight.std()) < 0.025


def test_a_model_that_reports_missing_weights_is_loaded_again_with_torch_s_init():
    """For classes whose own initialisation calls torch.nn.init directly (remote-style code)."""
    import torch.nn.init as init

    calls = []  # meta tensors: transformers builds the model on the meta device

    class Recording:
        @staticmethod
        def from_pretrained(folder, **kwargs):
            tensor = torch.zeros(2, device="meta")
            skipped = init.constant_(tensor, 1.0) is tensor and init.constant_ is not constant
            calls.append((kwargs.get("output_loading_info", False), skipped))
            model = f"model {len(calls)}"
            return (model, {"missing_keys": {"head.weight"}}) if kwargs.get(
                "output_loading_info") else model

    constant = init.constant_
    assert from_pretrained(Recording, "folder") == "model 2"
    assert calls == [(True, True), (False, False)]
