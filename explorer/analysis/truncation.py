"""Which input tokens a recurrent state depends on, by autograd: how far back truncated
back-propagation through time lets a gradient reach (the recurrent language model run over a
text in windows of `bptt` tokens exactly as training runs it, explorer.training.objectives.
rnn_lm_forward, the state detached between windows), and which later source tokens a seq2seq
encoder's state sees (all of them when it is bidirectional, none otherwise)."""

from __future__ import annotations

import numpy as np


def gradient_reach(workspace, text: str, bptt: int | None) -> np.ndarray:
    """‖∂(log Σ exp logits_T)/∂x_t‖ for every token t of `text` (0 where truncation stops it)."""
    import torch

    from explorer.analysis.this_thread import this_thread_only
    from explorer.training.objectives import rnn_lm_forward

    model = workspace.model
    ids = torch.tensor([workspace.tokenizer.encode(text)])  # (1, T)
    if ids.size(1) == 0:
        return np.zeros(0)
    embedded = []

    @this_thread_only  # the app's live probe may run the model meanwhile
    def keep(_module, _inputs, out) -> None:
        embedded.append(out)

    handle = model.embedding.register_forward_hook(keep)
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            logits, _state = rnn_lm_forward(model, ids, None, bptt or ids.size(1))  # (1, T, V)
            grads = torch.autograd.grad(logits[0, -1].logsumexp(-1), embedded, allow_unused=True)
    finally:
        handle.remove()
        model.train(was_training)
    norms = [torch.zeros(piece.shape[1]) if grad is None else grad[0].norm(dim=-1)
             for piece, grad in zip(embedded, grads)]  # each (window,)
    return torch.cat(norms).detach().numpy()


def encoder_dependence(workspace, source: str, t: int) -> int:
    """How many source tokens after position `t` (1 = first) the encoder's output h_t depends on:
    the gradient of h_t with respect to each token's embedding, nonzero or not."""
    import torch

    model = workspace.model
    tokenizer = workspace.src_tokenizer or workspace.tokenizer
    ids = torch.tensor([tokenizer.encode(source)])  # (1, Ts)
    if not 1 <= t <= ids.size(1):
        raise ValueError(f"t = {t} is outside the source's {ids.size(1)} tokens")
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad():
            embedded = model.src_embedding(ids).detach().requires_grad_(True)  # (1, Ts, E)
            outputs = model.encoder(embedded)[0]  # (1, Ts, D*H)
            (grad,) = torch.autograd.grad(outputs[0, t - 1].sum(), embedded)
    finally:
        model.train(was_training)
    return int((grad[0, t:].norm(dim=-1) > 0).sum())
