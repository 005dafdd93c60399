"""Captum's attributions of one output token, written the documented way, as the reference the
explorer's own attribution code is checked against (tests/analysis, tests/hf)."""

from __future__ import annotations

import warnings

import numpy as np
import torch
from captum.attr import InputXGradient, LayerIntegratedGradients, Saliency


def _logits(output):
    return output[0] if isinstance(output, tuple) else output


def _log_prob(model, position, token):
    def forward(*ids):
        return _logits(model(*ids))[:, position].log_softmax(-1)[:, token]

    return forward


def embedding_forward(model, inputs, modules, position, token):
    """f as a function of the embedding outputs: forward hooks put the given tensors in place."""

    def forward(*embedded):
        batch = embedded[0].size(0)
        handles = [module.register_forward_hook(lambda m, a, out, e=e: e)
                   for module, e in zip(modules, embedded)]
        try:
            logits = _logits(model(*[t.expand(batch, -1) for t in inputs]))
        finally:
            for handle in handles:
                handle.remove()
        return logits[:, position].log_softmax(-1)[:, token]

    return forward


def captum_scores(model, inputs, modules, position, token, method, baselines=None, steps=50,
                  batch_size=None) -> tuple[np.ndarray, float | None]:
    """One row of token scores (source columns, then prefix columns) and, for IG, Captum's
    convergence delta. `modules` are the token-embedding layers in input order, all distinct."""
    model.eval()
    if method == "ig":
        with warnings.catch_warnings():  # the layers are the two embeddings: independent
            warnings.filterwarnings("ignore", "Multiple layers provided")
            lig = LayerIntegratedGradients(_log_prob(model, position, token), list(modules))
        attributions, delta = lig.attribute(tuple(inputs), baselines=tuple(baselines), n_steps=steps,
                                            internal_batch_size=batch_size,
                                            return_convergence_delta=True)
        per_layer = attributions if isinstance(attributions, list) else [attributions]
        return np.concatenate([a[0].sum(-1).detach().numpy() for a in per_layer]), float(delta)
    embedded = tuple(module(ids).detach().requires_grad_() for module, ids in zip(modules, inputs))
    forward = embedding_forward(model, inputs, modules, position, token)
    if method == "saliency":
        grads = Saliency(forward).attribute(embedded, abs=True)
        return np.concatenate([g[0].norm(dim=-1).detach().numpy() for g in grads]), None
    products = InputXGradient(forward).attribute(embedded)
    return np.concatenate([p[0].sum(-1).detach().numpy() for p in products]), None


def assert_matches_captum(result, model, inputs, modules, rows, method, baselines=None, steps=50,
                          batch_size=None, atol=1e-5, rtol=1e-4):
    """Each explained row of `result` equals Captum's numbers for that output token (columns a
    later prefix token cannot reach are NaN in ours and 0 in Captum's)."""
    for r, row in enumerate(rows):
        expected, _ = captum_scores(model, inputs, modules, row.position, row.token_id, method,
                                    baselines, steps, batch_size)
        ours = np.nan_to_num(result.scores[r], nan=0.0)
        np.testing.assert_allclose(ours, expected, atol=atol, rtol=rtol)
