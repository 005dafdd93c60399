"""Plain data that crosses from the core (training, decoding, analysis) to the UI and the CLI.

Only floats, ints, strings and numpy arrays: never tensors, never Qt objects. Events are created
in worker threads and read in the GUI thread, so arrays handed over must be copies the producer
no longer mutates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class StepMetrics:
    """One optimisation step."""

    step: int
    loss: float
    lr: float
    grad_norm: float  # global norm before clipping
    grad_norm_clipped: float  # after clipping (equal to grad_norm when no clipping happened)
    tokens: int  # target tokens in this step's batch
    tokens_per_s: float
    elapsed_s: float
    total_steps: int | None = None  # for progress bars; None when open-ended


@dataclass
class EvalMetrics:
    step: int
    val_loss: float
    perplexity: float
    token_accuracy: float
    bleu: float | None = None  # corpus BLEU (0-100) of greedy decodes, seq2seq families only
    bleu_detail: object | None = None  # explorer.metrics.bleu.BleuBreakdown, when bleu is set
    example: object | None = None  # explorer.metrics.bleu.SentenceExample: one hyp vs ref


@dataclass
class AttentionSnapshot:
    """One attention map of one layer, all heads, as a numpy array."""

    kind: str  # "encoder", "decoder" or "cross" (RNN alignment is "cross")
    layer: int
    weights: np.ndarray  # (H, Tq, Tk), rows sum to 1
    rows: list[str]  # query token labels, len Tq
    cols: list[str]  # key token labels, len Tk


@dataclass
class ProbeSnapshot:
    """What the model does on the probe input: attention and gradient flow, for the panels."""

    step: int
    source: str
    target: str
    attention: list[AttentionSnapshot] = field(default_factory=list)
    # layer name (seqmodels.Trace.hidden key) -> (T,) array of ||dL/dh_t|| for every step t
    grad_time: dict[str, np.ndarray] = field(default_factory=dict)
    grad_time_labels: dict[str, list[str]] = field(default_factory=dict)  # token at each t
    # Transformers: ||dL/d(block output)|| per block, bottom to top
    grad_depth: np.ndarray | None = None
    grad_depth_labels: list[str] = field(default_factory=list)
    # ||dL/dθ|| over each layer's parameters (explorer.analysis.param_gradients), bottom to top
    grad_params: np.ndarray | None = None
    grad_params_labels: list[str] = field(default_factory=list)
    # explorer.analysis.hidden.HiddenSnapshot of the same forward pass: hidden states, gates,
    # residual stream and logit lens, for the hidden panel
    hidden: object | None = None
    # explorer.analysis.explain.LiveExplanation: attribution or rollout computed by a training
    # probe when the attribution view asked for it (ProbeInput.explanation); else None
    explanation: object | None = None
    # panel id -> what that panel's live function (its panel registry entry's `live`) returned on
    # this probe: plain data, for the panels in sight only (ProbeInput.live)
    live: dict[str, object] = field(default_factory=dict)


@dataclass
class TrainingFinished:
    step: int
    reason: str  # "done", "stopped", "time" (the time limit), "nan", "oom" or "error"
    message: str = ""

