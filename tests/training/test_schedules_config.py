import math

import pytest

from explorer.errors import UserError
from explorer.training import TrainConfig, learning_rate, lr_factor
from explorer.training.schedules import noam_rate


def vaswani(step, d_model, warmup):
    # "Attention is all you need", eq. 3
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@pytest.mark.parametrize("warmup", [1, 10, 4000])
def test_noam_is_vaswani_scaled_so_the_peak_is_the_users_lr(warmup):
    config = TrainConfig(schedule="noam", warmup=warmup, lr=5e-4)
    peak = vaswani(warmup, 512, warmup)
    for step in (1, 2, warmup // 2 + 1, warmup, warmup + 1, 3 * warmup, 100_000):
        expected = 5e-4 * vaswani(step, 512, warmup) / peak
        assert learning_rate(config, step, 100_000) == pytest.approx(expected, rel=1e-12)
    assert learning_rate(config, warmup, 100_000) == pytest.approx(5e-4)
    highest = max(learning_rate(config, s, 10**5) for s in range(1, 3 * warmup + 2))
    assert highest == pytest.approx(5e-4)
    assert noam_rate(7, 512, 3) == vaswani(7, 512, 3)


def test_cosine_warms_up_then_decays_to_min_ratio():
    config = TrainConfig(schedule="cosine", warmup=10, lr=1e-3, min_lr_ratio=0.1)
    lrs = [learning_rate(config, s, 110) for s in range(1, 111)]
    assert lrs[:10] == pytest.approx([1e-3 * s / 10 for s in range(1, 11)])
    assert lrs[9] == pytest.approx(1e-3)  # the peak at the end of warm-up
    assert lrs[-1] == pytest.approx(1e-4)  # lr * min_lr_ratio at the last step
    middle = learning_rate(config, 60, 110)  # half-way through the decay: cos(pi/2) = 0
    assert middle == pytest.approx(1e-4 + 0.9e-3 * 0.5)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))


def test_constant_with_and_without_warmup():
    assert lr_factor("constant", 1, 100) == 1.0
    assert lr_factor("constant", 5, 100, warmup=10) == 0.5
    assert lr_factor("constant", 50, 100, warmup=10) == 1.0


def test_train_config_json_round_trip():
    config = TrainConfig(optimizer="sgd", lr=0.1, betas=(0.8, 0.9), clip=None, steps=7, seed=3)
    back = TrainConfig.from_json(config.to_json())
    assert back == config and back.betas == (0.8, 0.9)


@pytest.mark.parametrize(
    "changes",
    [dict(optimizer="lbfgs"), dict(schedule="step"), dict(lr=0.0), dict(batch_size=0),
     dict(clip=-1.0), dict(label_smoothing=1.0), dict(schedule="noam", warmup=0),
     dict(device="tpu"), dict(steps=0)],
)
def test_bad_train_config_is_a_user_error(changes):
    with pytest.raises(UserError):
        TrainConfig(**changes)


def test_unknown_option_in_json_is_a_user_error():
    with pytest.raises(UserError, match="unknown training options: colour"):
        TrainConfig.from_dict({"colour": "red"})
    assert math.isclose(TrainConfig.from_dict({"lr": 0.5}).lr, 0.5)
