"""The app's side of the family registry: what each model family is and how the app trains,
probes and decodes it. The model side (config class, presets, builder) is `seqmodels.families`.

    family = family_of(workspace.model)      # or get_family("gpt")
    family.is_lm, family.has_source, family.recurrent, family.masked_lm, family.decodes
    family.stacks, family.lm_stack, family.embeddings, family.logit_lens,   # what analysis reads
    output = family.loss(model, batch, label_smoothing, state, bptt)   # training.objectives
    feed = family.feed(workspace, train_config, max_eval, train)       # training.feeds
    encoded = family.encode_probe(workspace, source, target)           # analysis.probe

Decoding follows the flags: a family that `decodes` either continues a prompt (`is_lm`) or encodes
a source and writes the target (`has_source`) through the model's start/step API; a masked LM
does not decode left to right.

A new family adds one entry to FAMILIES below; one that lives outside this package (the Hugging
Face wrappers) calls `register_family` from its own module. This module imports no torch: the
behaviours are named as "module:function" and imported on first call, so `explorer --help` can
list the families.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from explorer.errors import UserError


class Lazy:
    """A callable named "module:attribute", imported on first call (keeps this table torch-free)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._resolved: Callable | None = None

    def resolve(self) -> Callable:
        if self._resolved is None:
            module, _, name = self.target.partition(":")
            self._resolved = getattr(importlib.import_module(module), name)
        return self._resolved

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


@dataclass(frozen=True)
class Family:
    name: str  # the config's `family`; the model side is seqmodels.families.model_family(name)
    summary: str  # one line for menus and tooltips, after the course notes
    has_source: bool  # reads a source and writes a target (encoder-decoder); else a language model
    recurrent: bool  # RNN: gradients through time; else a Transformer: gradients through depth
    has_positions: bool  # positional encoding: config.max_len caps every sequence
    # (model, batch, label_smoothing, state, bptt) -> objectives.LossOutput
    loss: Callable
    # (workspace, train_config, max_eval, train) -> a feed with train_batch(step), val_batches()
    feed: Callable
    # (workspace, source, target) -> probe.Encoded (model inputs, targets, token labels)
    encode_probe: Callable
    masked_lm: bool = False  # predicts masked tokens: no left-to-right distribution to decode
    # config field that caps a sequence's length (positions, location attention), or None
    max_len_field: str | None = None
    # Where the activation providers (explorer/analysis/activations/providers/) find things inside
    # the model (module paths are dotted attribute names); analyses read activation names instead:
    # stack -> (module that embeds its tokens, index of the model input it reads). The stacks are
    # the first part of the trace's names ("encoder.l0", "decoder.layer1", "lm.l0"); an LM has one.
    stacks: Mapping[str, tuple[str, int]] = field(default_factory=dict, hash=False)
    # "input", "source", "output" -> the module whose .weight is that (V, D) token embedding;
    # None: ask the model (a Hugging Face model's get_input_embeddings / get_output_embeddings)
    embeddings: Mapping[str, str] | None = field(default=None, hash=False)
    # modules from the decoder's residual stream to logits (final norm, head); empty: no logit lens
    logit_lens: tuple[str, ...] = ()
    # stack -> (its layers: the ModuleList of Transformer blocks, or the RNN; the norm after the
    # last block, or None) for the seqmodels activation provider; empty: another provider's model
    layers: Mapping[str, tuple[str, str | None]] = field(default_factory=dict, hash=False)
    # config field that picks the recurrent cell (seqmodels.cells), or None. "Compare cells"
    # builds its models of the first recurrent LM family that has one (analysis.probe)
    cell_field: str | None = None
    # Models opened from elsewhere (Hugging Face folders), not built from a config of ours:
    # (workspace, DataSpec) -> the same model with that data to fine-tune on; None: new data
    # builds a new model of the family
    attach_data: Callable | None = None
    # (workspace, directory) -> Path: saved in the family's own format (save_pretrained); None:
    # an explorer checkpoint (explorer.training.checkpoint)
    save: Callable | None = None
    # and read back: (path) -> whether the path is a model of this family's format (a Hugging
    # Face folder or cached model id); load_checkpoint asks them first
    opens: Callable | None = None
    # (path) -> Workspace: a folder of the family's own format (with `opens`), or a checkpoint of
    # the family's that load_checkpoint cannot build from the config alone (a user model: its own
    # code rebuilds it); None: load_checkpoint's own way
    load: Callable | None = None
    # (model, num_positions) -> analysis.positional.ModelPositions or None, for models whose
    # positional modules are not ours (Hugging Face); None: analysis finds our own modules
    positions: Callable | None = None
    # with `positions`: (model, length) -> [RelativeBias per stack] (T5's relative-position bias,
    # explorer.hf.positions), and (model) -> one line on why the model has no position table
    relative_bias: Callable | None = None
    no_positions_reason: Callable | None = None

    @property
    def is_lm(self) -> bool:
        return not self.has_source

    @property
    def decodes(self) -> bool:
        """Has the incremental start/step API that greedy, sampling and beam search drive."""
        return not self.masked_lm

    @property
    def model(self):
        """The model side: config class, presets and builder (imports the family's model module)."""
        from seqmodels.families import model_family

        return model_family(self.name)

    @property
    def lm_stack(self) -> str | None:
        """A language model's one stack: "lm" (RNN), "decoder" (GPT) or "encoder" (BERT)."""
        return next(iter(self.stacks), None) if self.is_lm else None

    def max_len(self, config) -> int | None:
        return getattr(config, self.max_len_field) if self.max_len_field else None


def _objective(name: str) -> Lazy:
    return Lazy(f"explorer.training.objectives:{name}")


def _feed(name: str) -> Lazy:
    return Lazy(f"explorer.training.feeds:{name}")


def _probe(name: str) -> Lazy:
    return Lazy(f"explorer.analysis.probe:{name}")


_FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            "rnn-lm", "Recurrent language model: h_t = f(h_{t-1}, x_t), predicts the next token",
            has_source=False, recurrent=True, has_positions=False,
            loss=_objective("stream_loss"), feed=_feed("StreamFeed"),
            encode_probe=_probe("encode_next_token"),
            stacks={"lm": ("embedding", 0)}, embeddings={"input": "embedding", "output": "head"},
            layers={"lm": ("rnn", None)}, cell_field="cell",
        ),
        Family(
            "seq2seq",
            "Encoder-decoder RNN: the encoder reads the source, the decoder writes the target",
            has_source=True, recurrent=True, has_positions=False,
            loss=_objective("pair_loss"), feed=_feed("Seq2SeqFeed"),
            encode_probe=_probe("encode_pair"), max_len_field="max_src_len",
            stacks={"encoder": ("src_embedding", 0), "decoder": ("tgt_embedding", 1)},
            embeddings={"input": "tgt_embedding", "source": "src_embedding", "output": "head"},
            layers={"encoder": ("encoder", None), "decoder": ("decoder", None)}, cell_field="cell",
        ),
        Family(
            "transformer",
            "Encoder-decoder Transformer: self-attention replaces recurrence (Vaswani 2017)",
            has_source=True, recurrent=False, has_positions=True,
            loss=_objective("pair_loss"), feed=_feed("Seq2SeqFeed"),
            encode_probe=_probe("encode_pair"), max_len_field="max_len",
            stacks={"encoder": ("src_embed", 0), "decoder": ("tgt_embed", 1)},
            embeddings={"input": "tgt_embed.token", "source": "src_embed.token", "output": "lm_head"},
            logit_lens=("decoder_norm", "lm_head"),
            layers={"encoder": ("encoder_layers", "encoder_norm"),
                    "decoder": ("decoder_layers", "decoder_norm")},
        ),
        Family(
            "gpt",
            "Decoder-only Transformer with causal self-attention: next-token language model",
            has_source=False, recurrent=False, has_positions=True,
            loss=_objective("block_loss"), feed=_feed("BlockFeed"),
            encode_probe=_probe("encode_next_token"), max_len_field="max_len",
            stacks={"decoder": ("embed", 0)}, embeddings={"input": "embed.token", "output": "lm_head"},
            logit_lens=("final_norm", "lm_head"), layers={"decoder": ("layers", "final_norm")},
        ),
        Family(
            "bert", "Encoder-only Transformer trained to fill in masked tokens (15%: 80/10/10)",
            has_source=False, recurrent=False, has_positions=True, masked_lm=True,
            loss=_objective("block_loss"), feed=_feed("BlockFeed"),
            encode_probe=_probe("encode_masked"), max_len_field="max_len",
            stacks={"encoder": ("embed", 0)}, embeddings={"input": "embed.token", "output": "lm_head"},
            layers={"encoder": ("layers", "final_norm")},
        ),
    )
}


# families that are opened, never built from scratch (Hugging Face folders): not in the menus
_UNLISTED: dict[str, Family] = {}
# Plug-ins (the Hugging Face wrappers, the user-model families) register their families when they
# are imported; a loader that imports them is registered here by the layer above (the composition
# root, explorer/__init__.py) and run once, on the registry's first lookup, so this module names
# no plug-in and `import explorer` loads none.
_LOADERS: list[Callable[[], None]] = []
_LOADING = threading.RLock()  # the GUI and a worker thread may both ask first


def register_loader(load: Callable[[], None]) -> None:
    """Run `load` (it imports modules that call register_family) before the next lookup."""
    _LOADERS.append(load)


def load_plugins() -> None:
    """Run the registered loaders not run yet (each once; a loader that looks up is not rerun)."""
    if not _LOADERS:  # the common case, without the lock
        return
    with _LOADING:
        while _LOADERS:
            _LOADERS.pop(0)()


def register_family(family: Family, listed: bool = True) -> None:
    """Add (or replace) a family, e.g. from a module outside explorer/families.py. Its model side
    registers with seqmodels.families.register_model_family. An unlisted family is found by
    `get_family` / `family_of` but left out of `families()` (the new-model menu, train --arch)."""
    (_FAMILIES if listed else _UNLISTED)[family.name] = family


def families() -> dict[str, Family]:
    """Every family a new model can be built from, by name, in menu order."""
    load_plugins()
    return dict(_FAMILIES)


def family_names() -> tuple[str, ...]:
    load_plugins()
    return tuple(_FAMILIES)


def get_family(name: str) -> Family:
    """The family called `name`; a one-line UserError naming the choices otherwise."""
    load_plugins()
    if name in _UNLISTED:
        return _UNLISTED[name]
    if name not in _FAMILIES:
        raise UserError(f"unknown model family {name!r}; choose one of {', '.join(_FAMILIES)}")
    return _FAMILIES[name]


def module_at(model, path: str):
    """The submodule at a dotted attribute path ("tgt_embed.token") of `model`."""
    for part in path.split("."):
        model = getattr(model, part)
    return model


def family_of(model_or_config) -> Family:
    """The family of a model (anything with a .config) or of a config."""
    config = getattr(model_or_config, "config", model_or_config)
    return get_family(config.family)


def family_opening(path) -> Family | None:
    """The family whose own format `path` is (its `opens` says so), or None: an explorer
    checkpoint. Plug-ins register such families (explorer/__init__.py loads them)."""
    load_plugins()
    for family in {**_FAMILIES, **_UNLISTED}.values():
        if family.opens is not None and family.load is not None and family.opens(path):
            return family
    return None
