"""Hidden states of every traced layer over many texts (the validation data), for LSTMVis's
"where else does this pattern occur" and for finding the units that track bracket depth.

`state_streams(workspace, pairs, max_tokens=100_000)` runs the model with `trace=True` on batches of
texts (each from a zero state, as the probe does), drops the padding, and lays the texts end to end:
one `StateStream` (units x tokens) per trace name. Seq2seq encoders read the sources, decoders the
teacher-forced targets (`[<bos>] + target`); language models read their texts.
"""

from __future__ import annotations

import numpy as np
import torch

from explorer.analysis.probe import _PROBE_LOCK
from explorer.analysis.selection import StateStream
from explorer.families import family_of
from explorer.readers import reading
from seqmodels.config import BOS_ID, EOS_ID, PAD_ID


def _sequences(workspace, pairs, max_tokens: int) -> tuple[list[list[int]], list[list[int]] | None]:
    """Token ids per text (the source side, or the LM text) and per target, within `max_tokens`."""
    config = workspace.model.config
    seq2seq = workspace.is_seq2seq
    limit = family_of(config).max_len(config)
    src_tokenizer = (workspace.src_tokenizer or workspace.tokenizer) if seq2seq else workspace.tokenizer
    sources, targets, total = [], [] if seq2seq else None, 0
    for source, target in pairs:
        ids = src_tokenizer.encode(source or target)
        if seq2seq:
            ids = ids + [EOS_ID]
        ids = ids[:limit] if limit else ids
        if not ids:
            continue
        sources.append(ids)
        if seq2seq:
            targets.append(([BOS_ID] + workspace.tokenizer.encode(target))[:limit])
        total += len(ids)
        if total >= max_tokens:
            break
    return sources, targets


def _padded(rows: list[list[int]], device) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded (B, T) ids and their padding mask (True = padding)."""
    lengths = torch.tensor([len(r) for r in rows])
    ids = torch.full((len(rows), int(lengths.max())), PAD_ID, dtype=torch.long)  # (B, T)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    pad_mask = torch.arange(ids.shape[1]) >= lengths[:, None]  # (B, T)
    return ids.to(device), pad_mask.to(device)


def _fused_layers(rnn) -> list | None:
    """One single-layer seqmodels.RNN per layer of `rnn`, sharing its parameters: without a trace each
    runs torch's fused kernel, ~10x faster than stepping in Python. None for the UGRNN (no kernel)."""
    from seqmodels.recurrent import FUSED_KERNELS, RNN

    if rnn.cell not in FUSED_KERNELS:
        return None
    layers = []
    for k in range(rnn.num_layers):
        layer_input = rnn.input_size if k == 0 else rnn.hidden_size * rnn.num_directions
        single = RNN(rnn.cell, layer_input, rnn.hidden_size, 1, bidirectional=rnn.bidirectional, batch_first=True)
        for suffix in rnn.direction_suffixes():
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                setattr(single, f"{kind}_l0{suffix}", getattr(rnn, f"{kind}_l{k}{suffix}"))
        layers.append(single)
    return layers


def _rnn_lm_states(model, layers, ids: torch.Tensor, pad_mask: torch.Tensor) -> dict[str, list[torch.Tensor]]:
    """An RNN LM's h_t of every layer, (B, T, H) each, named as its trace names them."""
    x = model.embedding(ids)  # (B, T, E)
    states = {}
    for k, layer in enumerate(layers):
        x = layer(x, pad_mask=pad_mask if pad_mask.any() else None)[0]  # (B, T, D * H)
        halves = x.split(layer.hidden_size, dim=-1)
        for suffix, half in zip(layer.direction_suffixes(), halves):
            states[f"lm.l{k}{suffix}"] = [half]
    return states


def _states(steps: list[torch.Tensor]) -> torch.Tensor:
    """A trace entry -> (B, T, units): RNN per-step (B, H) tensors, or a block's one (B, T, D)."""
    if len(steps) == 1 and steps[0].dim() == 3:
        return steps[0]
    return torch.stack(steps, dim=1)


def state_streams(workspace, pairs, max_tokens: int = 100_000, batch_size: int = 32) -> dict[str, StateStream]:
    """name -> StateStream of every traced layer over the texts of `pairs` ((source, target) tuples;
    a language model reads source, or target where source is empty), at most ~`max_tokens` tokens."""
    model = workspace.model
    family = family_of(model)
    device = next(model.parameters()).device
    sources, targets = _sequences(workspace, pairs, max_tokens)
    if not sources:
        raise ValueError("no text to run the model on")
    src_tokenizer = (workspace.src_tokenizer or workspace.tokenizer) if targets is not None else workspace.tokenizer
    reverse_source = bool(getattr(model.config, "reverse_source", False))
    chunks: dict[str, list[np.ndarray]] = {}
    labels: dict[str, list[str]] = {"encoder": [], "decoder": [], "lm": []}
    lengths: dict[str, list[int]] = {"encoder": [], "decoder": [], "lm": []}
    fused = _fused_layers(model.rnn) if family.recurrent and family.is_lm else None
    with _PROBE_LOCK, reading(model):
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                for first in range(0, len(sources), batch_size):
                    rows = sources[first:first + batch_size]
                    src, src_mask = _padded(rows, device)
                    if targets is not None:
                        tgt_rows = targets[first:first + batch_size]
                        tgt, tgt_mask = _padded(tgt_rows, device)
                        hidden = model(src, tgt, src_mask, tgt_mask, trace=True)[-1].hidden
                        sides = {"encoder": rows, "decoder": tgt_rows}
                    elif fused is not None:
                        hidden = _rnn_lm_states(model, fused, src, src_mask)
                        sides = {"lm": rows}
                    else:
                        # a Transformer LM masks the padding; an RNN LM's padding comes after each text
                        extra = () if family.recurrent else (src_mask,)
                        trace = model(src, *extra, trace=True)[-1]
                        sides = {family.lm_stack: rows}
                        hidden = trace.hidden
                    for name, steps in hidden.items():
                        side_rows = sides[name.split(".", 1)[0]]
                        batch = _states(steps).detach().float().cpu().numpy()  # (B, T, units)
                        chunks.setdefault(name, []).extend(batch[i, : len(r)] for i, r in enumerate(side_rows))
                    for side, side_rows in sides.items():
                        tokenizer = src_tokenizer if side != "decoder" or targets is None else workspace.tokenizer
                        for r in side_rows:
                            tokens = [str(t) for t in tokenizer.tokens(r)]
                            if side == "encoder" and reverse_source:
                                tokens = tokens[::-1]  # the encoder's steps are in reading order
                            labels[side] += tokens
                            lengths[side].append(len(r))
        finally:
            model.train(was_training)
    streams = {}
    for name, parts in chunks.items():
        side = name.split(".", 1)[0]
        starts = np.r_[0, np.cumsum(lengths[side])[:-1]].astype(np.int64)
        values = np.ascontiguousarray(np.concatenate(parts, axis=0).T, dtype=np.float32)  # (units, N)
        streams[name] = StateStream(name, values, labels[side], starts)
    return streams
