"""Training, checkpoints and decoding on a CUDA device, against the same work on the CPU; a real
out-of-memory error (the allocator's, not a raised stand-in). Skipped where no GPU is present (CI):
run on a lent GPU with `pytest tests/training/test_cuda.py` (see benchmarks/gpu_checks.sh)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

from explorer.decoding.search import greedy
from explorer.events import StepMetrics
from explorer.training import DataSpec, Trainer, build_workspace, load_checkpoint, save_checkpoint

from tests.training.conftest import make_tiny_config, make_tiny_workspace

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _losses(workspace, **changes) -> list[float]:
    events = Trainer(workspace, make_tiny_config(**changes)).run()
    return [e.loss for e in events if isinstance(e, StepMetrics)]


@pytest.mark.parametrize("family", ["rnn-lm", "seq2seq", "transformer", "gpt", "bert"])
def test_cuda_fp32_follows_the_cpu(family):
    # the same seed, batches and dropout masks: fp32 on the GPU differs from the CPU only by
    # the order of its sums (TF32 is off for fp32 matmuls by default in torch)
    cpu = _losses(make_tiny_workspace(family), steps=10)
    gpu = _losses(make_tiny_workspace(family), steps=10, device="cuda")
    assert gpu == pytest.approx(cpu, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("family", ["seq2seq", "gpt"])
def test_mixed_precision_learns(family, precision):
    losses = _losses(make_tiny_workspace(family), steps=80, lr=1e-2, device="cuda",
                     precision=precision)
    assert all(torch.isfinite(torch.tensor(losses)))
    assert sum(losses[-10:]) / 10 < 0.8 * sum(losses[:10]) / 10


def test_checkpoint_from_the_gpu_opens_on_the_cpu_with_the_same_outputs(tmp_path):
    workspace = make_tiny_workspace("transformer")
    _losses(workspace, steps=20, device="cuda")
    folder = save_checkpoint(workspace, tmp_path / "ckpt")
    reopened = load_checkpoint(folder)
    context = workspace.tokenizer.encode("a b c d")
    on_gpu = greedy(workspace.model.eval(), context, max_len=8, tokenizer=workspace.tokenizer)
    on_cpu = greedy(reopened.model.eval(), context, max_len=8, tokenizer=reopened.tokenizer)
    assert next(workspace.model.parameters()).is_cuda
    assert not next(reopened.model.parameters()).is_cuda
    assert on_gpu.token_ids == on_cpu.token_ids
    assert on_gpu.score == pytest.approx(on_cpu.score, abs=1e-4)


def test_a_real_out_of_memory_keeps_the_weights_and_training_goes_on():
    workspace = build_workspace(DataSpec(task="brackets", n_train=64, n_val=8), "gpt", seed=0,
                                d_model=512, num_heads=8, num_layers=4, d_ff=2048, max_len=512)
    workspace.model.cuda()
    before = copy.deepcopy(workspace.model.state_dict())
    free, total = torch.cuda.mem_get_info()
    # a cap of 2 GiB: a batch of 512 x 512 tokens needs several times that for its activations
    torch.cuda.set_per_process_memory_fraction(2 * 2**30 / total)
    try:
        events = list(Trainer(workspace, make_tiny_config(steps=3, batch_size=512, context=512,
                                                          device="cuda")).run())
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    finished = events[-1]
    assert finished.reason == "oom", finished
    assert "smaller batch size" in finished.message and "\n" not in finished.message
    after = workspace.model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    steps = _losses(workspace, steps=3, batch_size=4, context=64, device="cuda")
    assert len(steps) == 3 and all(map(lambda x: x == x, steps))


def test_hf_gpt2_greedy_on_the_gpu_is_generate(tmp_path):
    pytest.importorskip("transformers")
    from explorer.decoding.scoring import encode_context
    from explorer.hf import open_hf_model
    from tests.hf import builders
    from tests.hf.test_hf_decoding import reference_greedy

    workspace = open_hf_model(builders.build_gpt2(tmp_path / "gpt2"))
    workspace.model.cuda()
    context = encode_context(workspace, "the cat sat")
    ours = greedy(workspace.model, context, max_len=12, tokenizer=workspace.tokenizer)
    ids, logprobs = reference_greedy(workspace, context, 12)  # generate, on the same GPU model
    assert ours.token_ids == ids
    assert ours.token_logprobs == pytest.approx(logprobs, abs=1e-4)


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_recurrent_weights_sit_in_one_cudnn_buffer(cell):
    # seqmodels' RNN calls torch's fused kernel with its own parameters: moved to the GPU they are
    # laid out in one buffer as torch.nn.GRU's are, else cuDNN copies them at every call and warns
    workspace = make_tiny_workspace("rnn-lm", cell=cell, num_layers=2)
    before = {k: v.clone() for k, v in workspace.model.state_dict().items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = _losses(workspace, steps=5, device="cuda")
    assert not [w for w in caught if "contiguous chunk" in str(w.message)]
    assert len(losses) == 5
    reference = make_tiny_workspace("rnn-lm", cell=cell, num_layers=2)
    assert all(torch.equal(before[k], v) for k, v in reference.model.state_dict().items())
    assert _losses(reference, steps=5) == pytest.approx(losses, rel=1e-3, abs=1e-4)
