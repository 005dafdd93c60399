import pytest

from explorer.training import DataSpec, TrainConfig, build_workspace

# Small enough that a few dozen steps take well under a second on one CPU thread.
TINY_TRANSFORMER = dict(d_model=32, num_heads=2, num_layers=1, d_ff=64, dropout=0.0)
TINY_RNN = dict(embed_dim=16, hidden_size=32)


def make_tiny_workspace(family: str, seed: int = 0, **overrides):
    if family in ("seq2seq", "transformer"):
        spec = DataSpec(task="copy", n_train=256, n_val=32)
    else:
        spec = DataSpec(task="brackets", n_train=64, n_val=8)
    sizes = TINY_RNN if family in ("rnn-lm", "seq2seq") else TINY_TRANSFORMER
    if family in ("gpt", "bert"):
        sizes = {**sizes, "max_len": 32}
    return build_workspace(spec, family, seed=seed, **{**sizes, **overrides})


def make_tiny_config(**changes) -> TrainConfig:
    values = dict(steps=20, batch_size=16, context=32, lr=3e-3, eval_every=0, eval_examples=32,
                  bleu_examples=0, device="cpu", num_threads=1)
    return TrainConfig(**{**values, **changes})


@pytest.fixture
def tiny_workspace():
    """A fresh untrained workspace of a family: copy task for seq2seq, brackets for LMs."""
    return make_tiny_workspace


@pytest.fixture
def tiny_config():
    """A TrainConfig for fast CPU tests; keyword arguments change it."""
    return make_tiny_config
