"""TrainConfig: everything about how a model is trained, with a JSON round trip."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from explorer.errors import UserError

OPTIMIZERS = ("sgd", "adam", "adamw")
SCHEDULES = ("constant", "noam", "cosine")
DEVICES = ("auto", "cpu", "cuda", "mps")
PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass
class TrainConfig:
    # optimisation
    optimizer: str = "adamw"  # one of OPTIMIZERS
    lr: float = 1e-3  # the peak learning rate: every schedule reaches exactly this value
    weight_decay: float = 0.01  # AdamW only (decoupled); never applied to biases and norms
    momentum: float = 0.9  # SGD only
    betas: tuple[float, float] = (0.9, 0.999)  # Adam / AdamW
    schedule: str = "constant"  # one of SCHEDULES
    warmup: int = 0  # linear warm-up steps (Noam: the step where the peak is reached)
    min_lr_ratio: float = 0.1  # cosine decays to lr * min_lr_ratio at the last step
    clip: float | None = 1.0  # gradient clipping threshold tau on the global norm; None = off
    label_smoothing: float = 0.0
    # length of training: steps wins over epochs; neither means 1000 steps
    steps: int | None = None
    epochs: float | None = None
    time_limit: float | None = None  # minutes of wall clock, evaluations included; then stop cleanly
    batch_size: int = 32
    # language models
    context: int = 64  # block length of GPT/BERT examples and RNN-LM chunks
    bptt: int | None = None  # RNN LMs: detach the carried state every bptt tokens (None = context)
    mask_prob: float = 0.15  # BERT: share of tokens chosen for prediction (80/10/10 split)
    # evaluation
    eval_every: int = 100  # steps between evaluations; 0 = only at the end
    eval_examples: int = 256  # validation examples (LM blocks) used per evaluation
    bleu_examples: int = 100  # seq2seq: validation sources decoded greedily for BLEU; 0 = no BLEU
    probe_every_s: float = 0.5  # seconds between calls of trainer.probe_fn
    # machine
    seed: int = 0
    device: str = "auto"  # one of DEVICES; auto = cuda > mps > cpu
    precision: str = "fp32"  # autocast precision on CUDA; CPU and MPS always train in fp32
    num_threads: int | None = None  # CPU intra-op threads; None: explorer.runtime.choose_threads

    def __post_init__(self) -> None:
        if isinstance(self.betas, list):
            self.betas = tuple(self.betas)  # JSON gives a list
        self.validate()

    def _check_types(self) -> None:
        """A JSON file can hold anything: each field must have its declared type (issue 16)."""
        for field in fields(self):
            value = getattr(self, field.name)
            if not _has_type(value, str(field.type)):
                raise UserError(f"training option {field.name} must be {field.type}, "
                                f"got {value!r}")

    def validate(self) -> None:
        self._check_types()
        def choose(name: str, value: str, options: tuple[str, ...]) -> None:
            if value not in options:
                raise UserError(f"unknown {name} {value!r}; choose one of {', '.join(options)}")

        choose("optimizer", self.optimizer, OPTIMIZERS)
        choose("schedule", self.schedule, SCHEDULES)
        choose("device", self.device, DEVICES)
        choose("precision", self.precision, PRECISIONS)
        if not self.lr > 0:
            raise UserError(f"learning rate must be positive, got {self.lr}")
        if self.batch_size < 1:
            raise UserError(f"batch size must be at least 1, got {self.batch_size}")
        if self.steps is not None and self.steps < 1:
            raise UserError(f"steps must be at least 1, got {self.steps}")
        if self.num_threads is not None and self.num_threads < 1:
            raise UserError(f"threads must be at least 1, got {self.num_threads}")
        if self.time_limit is not None and not self.time_limit > 0:
            raise UserError(f"time limit must be positive minutes, got {self.time_limit}")
        if self.epochs is not None and not self.epochs > 0:
            raise UserError(f"epochs must be positive, got {self.epochs}")
        if self.clip is not None and not self.clip > 0:
            raise UserError(f"clip threshold must be positive, got {self.clip}")
        if not 0 <= self.label_smoothing < 1:
            raise UserError(f"label smoothing must be in [0, 1), got {self.label_smoothing}")
        if self.context < 2:
            raise UserError(f"context must be at least 2 tokens, got {self.context}")
        if self.bptt is not None and self.bptt < 1:
            raise UserError(f"bptt must be at least 1, got {self.bptt}")
        if not 0 < self.mask_prob < 1:
            raise UserError(f"mask probability must be in (0, 1), got {self.mask_prob}")
        if self.warmup < 0 or self.eval_every < 0:
            raise UserError("warmup and eval_every cannot be negative")
        if self.schedule == "noam" and self.warmup < 1:
            raise UserError("the noam schedule needs --warmup of at least 1 step")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["betas"] = list(self.betas)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"unknown training options: {', '.join(unknown)}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise UserError(f"bad training options: {exc}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TrainConfig:
        return cls.from_dict(json.loads(text))


def _has_type(value: Any, annotation: str) -> bool:
    """`value` fits a field annotated `annotation` ("int", "float | None", "tuple[...]")."""
    if value is None:
        return annotation.endswith("| None")
    base = annotation.split(" | ")[0]
    if isinstance(value, bool):
        return base == "bool"
    if base == "int":
        return isinstance(value, int)
    if base == "float":
        return isinstance(value, (int, float)) and math.isfinite(value)
    if base == "str":
        return isinstance(value, str)
    if base.startswith("tuple"):
        return isinstance(value, tuple) and len(value) == 2 and all(
            _has_type(v, "float") and not isinstance(v, bool) for v in value)
    return True
