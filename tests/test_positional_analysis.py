"""Positional-encoding analysis against the lecture notes' formula and its relative-position property."""

import math

import numpy as np
import pytest
import torch

from explorer.analysis import positional as pe


def exact_shift_map(dim: int, shift: int, base: float = 10000.0) -> np.ndarray:
    """The analytic M_k of the sinusoidal table: a 2x2 rotation by k * omega_i on each (sin, cos)
    pair, omega_i = 1 / base^(2i/D), written out from the notes' formula."""
    shift_map = np.zeros((dim, dim), dtype=np.float64)
    for i in range(0, dim, 2):
        omega = 1.0 / base ** (i / dim)
        s, c = np.sin(shift * omega), np.cos(shift * omega)
        # row vector [sin(a), cos(a)] @ [[c, -s], [s, c]] = [sin(a + kw), cos(a + kw)]
        shift_map[i : i + 2, i : i + 2] = [[c, -s], [s, c]]
    return shift_map


def test_sinusoidal_matches_the_notes_formula_element_by_element():
    table = pe.sinusoidal(50, 16, base=10000.0)
    for n in range(50):
        for i in range(16):
            # r_ni = sin(n / L^(i/D)) for even i, cos(n / L^((i-1)/D)) for odd i
            expected = math.sin(n / 10000 ** (i / 16)) if i % 2 == 0 else math.cos(
                n / 10000 ** ((i - 1) / 16)
            )
            assert table[n, i] == pytest.approx(expected, abs=1e-12)


def test_sinusoidal_agrees_with_the_models_table():
    from seqmodels.positional import sinusoidal as model_sinusoidal

    torch.set_default_dtype(torch.float32)
    np.testing.assert_allclose(pe.sinusoidal(64, 20), model_sinusoidal(64, 20).double(), atol=1e-6)


def test_cosine_similarity_depends_only_on_distance():
    sim = pe.similarity(pe.sinusoidal(100, 64), "cosine")
    assert sim.shape == (100, 100)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-12)
    means = np.array([np.diagonal(sim, offset=k).mean() for k in range(100)])  # by distance k
    spreads = np.array([np.diagonal(sim, offset=k).std() for k in range(100)])
    # every diagonal of the matrix is constant: similarity of n and n+k does not depend on n
    assert spreads.max() < 1e-9
    # and it falls off with distance near the diagonal
    assert means[0] > means[1] > means[2] > means[4]
    dot = pe.similarity(pe.sinusoidal(100, 64), "dot")
    np.testing.assert_allclose(np.diag(dot), 32.0, atol=1e-9)  # D/2 pairs of sin^2 + cos^2


def test_fitted_shift_map_is_the_rotation_with_tiny_residual():
    table = pe.sinusoidal(200, 32)
    for shift in (1, 5, 17):
        fit = pe.fit_shift_map(table, shift)
        assert fit.relative_residual < 1e-6
        np.testing.assert_allclose(table[:-shift] @ exact_shift_map(32, shift), table[shift:], atol=1e-12)
        # fast pairs are pinned down by 200 positions; slow ones (nearly constant) are not unique
        np.testing.assert_allclose(fit.matrix[:8, :8], exact_shift_map(32, shift)[:8, :8], atol=1e-9)


def test_a_random_learned_table_is_not_a_shift_of_itself():
    table = np.random.default_rng(0).normal(size=(200, 32))
    fit = pe.fit_shift_map(table, 3)
    assert fit.rows_used == 197
    assert fit.relative_residual > 0.5


def test_fit_rejects_impossible_shifts():
    with pytest.raises(ValueError):
        pe.fit_shift_map(pe.sinusoidal(10, 4), 10)
    with pytest.raises(ValueError):
        pe.similarity(np.eye(3), "euclid")


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
def test_model_positions_reads_what_the_model_uses(positional):
    from seqmodels import build_model, make_config

    torch.manual_seed(0)
    config = make_config("gpt", "tiny", vocab_size=20, positional=positional, max_len=40)
    model = build_model(config)
    found = pe.model_positions(model, 30)
    assert found.kind == positional
    if positional == "learned":
        weight = next(p for n, p in model.named_parameters() if "pos" in n)
        np.testing.assert_allclose(found.table, weight.detach().double()[:30].numpy())
    elif positional == "sinusoidal":
        np.testing.assert_allclose(found.table, pe.sinusoidal(30, 64), atol=1e-6)
    else:
        head_dim = config.d_model // config.num_heads
        np.testing.assert_allclose(found.table, pe.sinusoidal(30, head_dim), atol=1e-6)
        assert pe.fit_shift_map(found.table, 2).relative_residual < 1e-5
