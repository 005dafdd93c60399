"""Positional encodings against the formulas of the lecture notes and RoPE's defining property."""

import math

import pytest
import torch

from seqmodels.positional import LearnedPositional, RotaryEmbedding, SinusoidalPositional, sinusoidal


@pytest.mark.parametrize("d_model", [8, 7])
def test_sinusoidal_matches_the_formula(d_model):
    table = sinusoidal(50, d_model)
    assert table.shape == (50, d_model)
    for p in range(50):
        for j in range(d_model):
            i2 = j - j % 2  # the 2i of the pair
            angle = p / 10000 ** (i2 / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert table[p, j].item() == pytest.approx(expected, abs=1e-6)


def test_sinusoidal_shift_is_a_linear_map_that_depends_only_on_the_offset():
    # Lecture notes: the encoding at n + k is a linear combination of the encoding at n whose
    # coefficients depend on k only; for each (sin, cos) pair it is a rotation by k * w_i.
    d_model, k = 16, 5
    table = sinusoidal(64, d_model).double()
    shift = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        w = 1 / 10000 ** (2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        # sin(a + b) = sin a cos b + cos a sin b ; cos(a + b) = cos a cos b - sin a sin b
        shift[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    for n in range(0, 64 - k):
        torch.testing.assert_close(table[n] @ shift, table[n + k], atol=1e-6, rtol=0)


def test_sinusoidal_module_offsets_and_limits():
    module = SinusoidalPositional(max_len=20, d_model=6)
    torch.testing.assert_close(module(4, offset=3), sinusoidal(20, 6)[3:7])
    assert module.state_dict() == {}  # recomputed, never saved
    with pytest.raises(ValueError, match="max_len"):
        module(5, offset=16)


def test_learned_positional_is_a_trained_table():
    torch.manual_seed(0)
    module = LearnedPositional(max_len=10, d_model=4)
    out = module(3, offset=2)
    assert out.shape == (3, 4)
    torch.testing.assert_close(out, module.weight[2:5])
    out.sum().backward()
    assert module.weight.grad[2:5].abs().sum() > 0 and module.weight.grad[5:].abs().sum() == 0
    with pytest.raises(ValueError, match="max_len"):
        module(11)


def rotate_with_complex_numbers(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0):
    """Independent reference: pairs (x_2i, x_2i+1) as complex numbers times e^{j p theta_i}."""
    dim = x.size(-1)
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angle = positions.double().unsqueeze(-1) * theta  # (T, dim/2)
    z = torch.view_as_complex(x.double().unflatten(-1, (dim // 2, 2)).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2)


def test_rope_matches_complex_rotation_and_keeps_norms():
    torch.manual_seed(0)
    rope = RotaryEmbedding(dim=8, max_len=32)
    x = torch.randn(2, 3, 5, 8)  # (B, H, T, D)
    rotated = rope(x, offset=7)
    torch.testing.assert_close(rotated.double(), rotate_with_complex_numbers(x, torch.arange(7, 12)), atol=1e-5, rtol=0)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rope(x, offset=0)[..., 0, :], x[..., 0, :])  # position 0: no rotation
    assert rope.state_dict() == {}


def test_rope_dot_product_depends_only_on_the_relative_offset():
    torch.manual_seed(0)
    dim, max_len = 16, 64
    rope = RotaryEmbedding(dim, max_len)
    q, k = torch.randn(dim), torch.randn(dim)

    def score(m: int, n: int) -> float:
        q_m = rope(q.view(1, dim), offset=m)[0]
        k_n = rope(k.view(1, dim), offset=n)[0]
        return float(q_m @ k_n)

    for offset in (0, 1, 3, 10):
        scores = [score(n + offset, n) for n in range(0, max_len - offset, 7)]
        assert max(scores) - min(scores) < 1e-4, (offset, scores)
    # ...and it does depend on the offset (the property is not trivially true)
    assert abs(score(5, 0) - score(0, 0)) > 1e-3


def test_rope_limits():
    with pytest.raises(ValueError, match="even"):
        RotaryEmbedding(dim=5, max_len=8)
    with pytest.raises(ValueError, match="max_len"):
        RotaryEmbedding(dim=4, max_len=8)(torch.zeros(3, 4), offset=6)
