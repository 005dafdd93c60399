"""Learning-rate schedules as pure functions of the step, so a resumed run continues exactly.

Steps count from 1 (the first optimisation step). Every schedule is a factor in (0, 1] applied to
the user's lr, which is therefore the peak learning rate.
"""

from __future__ import annotations

import math


def noam_rate(step: int, d_model: int, warmup: int) -> float:
    """Vaswani et al. (2017), eq. 3: d^-0.5 * min(step^-0.5, step * warmup^-1.5)."""
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def lr_factor(
    schedule: str, step: int, total_steps: int, warmup: int = 0, min_ratio: float = 0.1
) -> float:
    step = max(step, 1)
    if schedule == "noam":
        # Scaled so the peak (at step == warmup) is 1; d_model cancels out.
        return noam_rate(step, 1, warmup) / noam_rate(warmup, 1, warmup)
    if warmup and step <= warmup:
        return step / warmup
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        decay_steps = max(total_steps - warmup, 1)
        progress = min((step - warmup) / decay_steps, 1.0)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    raise ValueError(f"unknown schedule {schedule!r}")


def learning_rate(config, step: int, total_steps: int) -> float:
    """The lr of step `step` under TrainConfig `config`."""
    factor = lr_factor(config.schedule, step, total_steps, config.warmup, config.min_lr_ratio)
    return config.lr * factor
