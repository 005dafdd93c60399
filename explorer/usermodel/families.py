"""The user-model families: a torch module the user wrote, opened behind our models' interface.

Four entries, by what the model reads (a prompt, or a source) and whether it is recurrent (it holds
a torch.nn.RNN/GRU/LSTM: gradients and hidden states through time; else through depth). They are
unlisted (never built from the new-model menu): a user model comes from `build()`, `explorer.show`
or a Recorder's run, and trains on the data attached to it (explorer/usermodel/training.py).
The analyses find the embeddings and the head through the adapter's `embedding`, `src_embedding`,
`tgt_embedding` and `head` properties (explorer/usermodel/adapter.py).
Imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from explorer.families import Family, Lazy, register_family

LM_FAMILIES = ("user-rnn-lm", "user-lm")
SEQ2SEQ_FAMILIES = ("user-rnn-seq2seq", "user-seq2seq")


@dataclass
class UserModelConfig:
    """`model.config` of a user model's adapter: how to rebuild it, and its special ids."""

    family: str  # one of LM_FAMILIES + SEQ2SEQ_FAMILIES
    build: str = ""  # "module:function" or "path/to/file.py:function" that returns the model
    args: dict[str, Any] | None = field(default_factory=dict)  # its JSON keyword arguments
    vocab_size: int = 0
    src_vocab_size: int | None = None
    start_id: int = 1  # what an output starts from (an LM's empty prompt, a decoder's first input)
    eos_id: int = 2
    pad_id: int = 0
    max_len: int | None = None  # positions the model holds; None: no bound


def family_name(seq2seq: bool, recurrent: bool) -> str:
    names = SEQ2SEQ_FAMILIES if seq2seq else LM_FAMILIES
    return names[0] if recurrent else names[1]


def _register() -> None:
    from seqmodels.families import ModelFamily, register_model_family

    probe = Lazy("explorer.usermodel.probe:encode")
    for name in LM_FAMILIES + SEQ2SEQ_FAMILIES:
        seq2seq, recurrent = name in SEQ2SEQ_FAMILIES, "rnn" in name
        if seq2seq:
            stacks = {"encoder": ("src_embedding", 0), "decoder": ("tgt_embedding", 1)}
            embeddings = {"input": "tgt_embedding", "source": "src_embedding", "output": "head"}
        else:
            stacks = {("lm" if recurrent else "decoder"): ("embedding", 0)}
            embeddings = {"input": "embedding", "output": "head"}
        register_family(Family(
            name, f"Your own PyTorch {'encoder-decoder' if seq2seq else 'language model'}",
            has_source=seq2seq, recurrent=recurrent, has_positions=False,
            loss=Lazy("explorer.usermodel.feed:user_loss"),
            feed=Lazy("explorer.usermodel.training:UserTrainFeed"),
            attach_data=Lazy("explorer.usermodel.training:attach_data"),
            encode_probe=probe, stacks=stacks, embeddings=embeddings,
            load=Lazy("explorer.usermodel.loader:load_user_checkpoint"),
        ), listed=False)
        register_model_family(ModelFamily(name, UserModelConfig,
                                          Lazy("explorer.usermodel.loader:build_from_config")))


_register()
