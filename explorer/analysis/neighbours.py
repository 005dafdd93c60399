"""The training examples nearest to an input, by the model's own states (Seq2Seq-Vis's neighbours).

Two kinds of state, both read through the activation layer (`run_with`, no family named here):
* "encoder": an RNN encoder's final state (the forward direction's last h of the top layer, and
  the backward direction's first, concatenated), or a Transformer's encoder output mean-pooled
  over the real (unpadded) source positions;
* "decoder" at output step t: the decoder's output (`decoder.hook_out`) at position t while it
  reads the pair's target under teacher forcing (pairs with fewer target tokens are left out).

An index holds one float32 vector per training pair; a query is a matrix-vector product over all
of them (29,000 x 128 floats: a millisecond) and an exact re-ranking of the best few, so the
nearest neighbour of a training example is itself at distance 0 (up to float rounding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from explorer.errors import UserError

BATCH_SIZE = 256
RNN_POINT = re.compile(r"encoder\.rnn\.l(\d+)\.(fwd|bwd)\.hook_h")


@dataclass
class NeighbourIndex:
    kind: str  # "encoder" or "decoder"
    step: int | None  # the output step of a decoder index
    pairs: list[tuple[str, str]]  # every training pair
    rows: np.ndarray  # (M,) the pairs indexed (a decoder index skips pairs too short)
    vectors: np.ndarray  # (M, D) float32
    squared_norms: np.ndarray  # (M,) float64
    rnn: tuple | None = None  # an RNN encoder's top-layer h points (forward, backward or None)

    def __len__(self) -> int:
        return len(self.rows)

    def query(self, vector: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """(pair indices, Euclidean distances) of the k nearest pairs, nearest first."""
        vector = np.asarray(vector, dtype=np.float32)
        if vector.shape != self.vectors.shape[1:]:
            raise UserError(f"a state of size {vector.shape} does not fit this index "
                            f"({self.vectors.shape[1]}): rebuild it for this model")
        k = min(k, len(self.rows))
        # |a - b|^2 = |a|^2 - 2 a.b + |b|^2 ranks all; the best few are then measured exactly
        approx = self.squared_norms - 2.0 * (self.vectors @ vector)
        shortlist = np.argpartition(approx, min(4 * k, len(approx) - 1))[: 4 * k] if len(approx) > 4 * k \
            else np.arange(len(approx))
        exact = np.linalg.norm(self.vectors[shortlist] - vector, axis=1)
        order = np.argsort(exact, kind="stable")[:k]
        return self.rows[shortlist[order]], exact[order]


@dataclass
class Neighbour:
    source: str
    target: str
    distance: float
    index: int  # into the training pairs


def _encoded(workspace, pairs, with_targets: bool = True):
    """(contexts, target ids) as the model reads them: sources with <eos>, targets with <eos>
    (None when not `with_targets`: an encoder's state does not depend on the target)."""
    from explorer.analysis.examples import _target_ids
    from explorer.decoding.scoring import encode_context

    contexts = [encode_context(workspace, s) for s, _ in pairs]
    return contexts, [_target_ids(workspace, t) for _, t in pairs] if with_targets else None


def _rnn_layers(model, inputs) -> tuple[str, str | None] | None:
    """The top encoder layer's forward (and backward) h point names of an RNN, else None."""
    from explorer.analysis.activations import list_points

    found = {}
    for point in list_points(model, inputs):
        match = RNN_POINT.fullmatch(point.name)
        if match:
            found.setdefault(int(match.group(1)), set()).add(match.group(2))
    if not found:
        return None
    top = max(found)
    backward = f"encoder.rnn.l{top}.bwd.hook_h" if "bwd" in found[top] else None
    return f"encoder.rnn.l{top}.fwd.hook_h", backward


def _check_kind(kind: str, step: int | None) -> None:
    if kind not in ("encoder", "decoder"):
        raise UserError(f"neighbours by encoder or decoder state, not {kind!r}")
    if kind == "decoder" and (step is None or step < 0):
        raise UserError("a decoder-state index needs an output step (0 or more)")


def state_vectors(workspace, pairs: Sequence[tuple[str, str]], kind: str = "encoder",
                  step: int | None = None, rnn="find") -> tuple[np.ndarray, np.ndarray]:
    """(vectors (B, D) float32, kept (B,) bool) of one batch of pairs; `kept` is False for pairs
    whose target has no position `step` (decoder states). `rnn`: the encoder's h points as
    `_rnn_layers` finds them, None for a Transformer, "find" to look."""
    _check_kind(kind, step)
    contexts, targets = _encoded(workspace, pairs, with_targets=kind == "decoder")
    return _state_vectors(workspace.model, contexts, targets, step, rnn)


def _state_vectors(model, contexts, targets, step, rnn) -> tuple[np.ndarray, np.ndarray]:
    """`state_vectors` of token ids: decoder states when `targets` is given, else encoder ones."""
    import torch

    from explorer.analysis.activations import run_with
    from explorer.analysis.examples import _padded
    from explorer.decoding.incremental import inference, special_ids

    start_id, _, pad_id = special_ids(model)
    src, src_pad = _padded(contexts, pad_id)  # (B, S)
    # the encoder's state does not depend on the target: one decoder step is enough then
    fed = [[start_id] + t[:-1] for t in targets] if targets is not None else [[start_id]] * len(contexts)
    tgt_in, tgt_pad = _padded(fed, pad_id)  # (B, T)
    inputs = (src, tgt_in, src_pad, tgt_pad)
    lengths = torch.tensor([len(c) for c in contexts])
    with inference(model):
        if targets is not None:
            out = run_with(model, inputs, read=["decoder.hook_out"]).values["decoder.hook_out"]
            kept = np.array([len(t) > step for t in targets])
            position = min(step, out.shape[1] - 1)
            return out[:, position].float().numpy(), kept  # (B, D)
        if rnn == "find":
            rnn = _rnn_layers(model, tuple(x[:1] for x in inputs))
        if rnn is None:  # a Transformer: the mean of the real positions of its output
            out = run_with(model, inputs, read=["encoder.hook_out"]).values["encoder.hook_out"]
            real = (~src_pad).unsqueeze(-1).to(out.dtype)  # (B, S, 1)
            pooled = (out * real).sum(1) / real.sum(1)  # (B, D)
            return pooled.float().numpy(), np.ones(len(contexts), dtype=bool)
        forward, backward = rnn
        values = run_with(model, inputs, read=[p for p in rnn if p]).values
        last = values[forward][torch.arange(len(contexts)), lengths - 1]  # (B, H) after the last token
        parts = [last] + ([values[backward][:, 0]] if backward else [])  # backward ends at 0
        return torch.cat(parts, dim=-1).float().numpy(), np.ones(len(contexts), dtype=bool)


def build_index(workspace, pairs: Sequence[tuple[str, str]], kind: str = "encoder",
                step: int | None = None, batch_size: int = BATCH_SIZE,
                progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> NeighbourIndex | None:
    """The index of `pairs` (None when `should_stop` said stop)."""
    if not workspace.is_seq2seq:
        raise UserError("neighbours by encoder and decoder state need an encoder-decoder")
    if not pairs:
        raise UserError("there are no training examples to index")
    pairs = list(pairs)
    _check_kind(kind, step)
    rnn = None
    if kind == "encoder":
        from explorer.decoding.incremental import inference

        with inference(workspace.model):
            rnn = _first_rnn_layers(workspace, pairs[0])
    contexts, targets = _encoded(workspace, pairs, with_targets=kind == "decoder")
    # sorted by length in tokens, a batch has little padding (wasted work); rows keep the order
    order = np.argsort([len(c) for c in contexts], kind="stable")
    chunks, kept_rows = [], []
    for start in range(0, len(order), batch_size):
        if should_stop is not None and should_stop():
            return None
        rows = order[start : start + batch_size]
        vectors, kept = _state_vectors(workspace.model, [contexts[i] for i in rows],
                                       None if targets is None else [targets[i] for i in rows],
                                       step, rnn)
        chunks.append(vectors[kept])
        kept_rows.append(rows[kept])
        if progress is not None:
            progress(min(start + batch_size, len(pairs)), len(pairs))
    vectors = np.concatenate(chunks).astype(np.float32)
    if len(vectors) == 0:
        raise UserError(f"no training target is longer than {step} tokens")
    return NeighbourIndex(kind, step, pairs, np.concatenate(kept_rows), vectors,
                          (vectors.astype(np.float64) ** 2).sum(1), rnn)


def _first_rnn_layers(workspace, pair):
    """`_rnn_layers` found on one pair."""
    from explorer.analysis.examples import _padded
    from explorer.decoding.incremental import special_ids

    start_id, _, pad_id = special_ids(workspace.model)
    contexts, targets = _encoded(workspace, [pair])
    src, src_pad = _padded(contexts, pad_id)  # (1, S)
    tgt_in, tgt_pad = _padded([[start_id] + targets[0][:-1]], pad_id)  # (1, T)
    return _rnn_layers(workspace.model, (src, tgt_in, src_pad, tgt_pad))


def nearest(workspace, index: NeighbourIndex, source: str, target: str, k: int = 10) -> list[Neighbour]:
    """The k training pairs nearest to (source, target) by the index's kind of state. The
    target matters for decoder states only (give the reference, or the model's output)."""
    if index.kind == "decoder" and not target:
        raise UserError("neighbours by decoder state need a target: the reference or an output")
    vectors, kept = state_vectors(workspace, [(source, target or source)], index.kind, index.step,
                                  index.rnn)
    if not kept[0]:
        raise UserError(f"the target is shorter than step {index.step}: choose an earlier step")
    rows, distances = index.query(vectors[0], k)
    return [Neighbour(index.pairs[r][0], index.pairs[r][1], float(d), int(r))
            for r, d in zip(rows, distances)]
