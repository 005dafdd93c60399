import os

import pytest

# No display in CI: every Qt test runs offscreen.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One intra-op thread: on a small shared machine, torch's thread pool spinning against other
# processes makes tiny models 30x slower. Set before any test imports torch.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def reverse_checkpoint(tmp_path_factory):
    """A one-layer Transformer on the `reverse` task, saved without optimizer state: the CLI
    export tests' shared model."""
    import torch

    from explorer.training import DataSpec, build_workspace, save_checkpoint

    torch.manual_seed(0)
    workspace = build_workspace(DataSpec(task="reverse", n_train=32, n_val=4), "transformer", seed=0,
                                d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=64)
    return save_checkpoint(workspace, tmp_path_factory.mktemp("ckpt") / "reverse", optimizer=False)
