"""What the gradient-flow panel shows, without Qt: the notes' scalar recurrence, the numbers as the
notes print them, the tokens the cells are compared on, and the history of probes."""

import numpy as np
import pytest
import torch

from explorer.analysis.gradients import (
    DEPTH, GradientHistory, cell_comparison_ids, format_gradient, scalar_recurrence_gradient,
)
from explorer.data.tokenizers import CharTokenizer
from explorer.events import ProbeSnapshot


def test_linear_recurrence_is_a_h_to_the_k():
    np.testing.assert_allclose(scalar_recurrence_gradient(1.1), 1.1 ** np.arange(101), rtol=1e-12)
    assert scalar_recurrence_gradient(0.9)[-1] == pytest.approx(2.656e-5, rel=1e-3)


def test_scalar_recurrence_with_tanh_matches_autograd():
    a_h = 1.3
    h0 = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    h = h0
    for _ in range(20):
        h = torch.tanh(a_h * h)
    (grad,) = torch.autograd.grad(h, h0)
    assert scalar_recurrence_gradient(a_h, steps=20, use_tanh=True)[-1] == pytest.approx(float(grad), rel=1e-9)


def test_numbers_print_as_in_the_notes():
    assert format_gradient(1.1**100) == "13781" and format_gradient(0.9**100) == "0.0000266"
    assert format_gradient(-0.5) == "0.5" and format_gradient(1e-9) == "1.000e-09"


def test_cells_are_compared_on_the_probe_text_repeated():
    tokenizer = CharTokenizer.train(["abc"])
    ids = cell_comparison_ids(tokenizer, "abc", length=7)
    assert ids == (tokenizer.encode("abc") * 3)[:7]
    assert len(cell_comparison_ids(tokenizer, "")) == 60  # no tokens: two ordinary ids, repeated


def snapshot(step, norms):
    return ProbeSnapshot(step=step, source="ab", target="", grad_time={"lm.l0": np.array(norms)},
                         grad_time_labels={"lm.l0": ["a", "b"][: len(norms)]})


def test_history_keeps_log10_rows_and_restarts_on_a_new_shape():
    history = GradientHistory(rows=3)
    for step in range(5):
        assert history.add(snapshot(step, [10.0 ** -step, 1.0])) == ["lm.l0"]
    assert history.steps == [2, 3, 4]  # the last `rows` probes
    np.testing.assert_allclose(history.matrix("lm.l0"), [[-2, 0], [-3, 0], [-4, 0]])
    assert history.labels == {"lm.l0": ["a", "b"]}
    history.add(snapshot(9, [0.0]))  # another probe input: one time step, a new history
    assert history.steps == [9] and history.matrix("lm.l0")[0, 0] == pytest.approx(-30)
    assert history.matrix("missing") is None


def test_a_transformers_history_is_per_block():
    depth = ProbeSnapshot(step=1, source="ab", target="", grad_depth=np.array([1.0, 100.0]),
                          grad_depth_labels=["encoder.layer0", "decoder.layer0"])
    history = GradientHistory()
    assert history.add(depth) == [DEPTH]
    assert history.labels[DEPTH] == ["encoder 1", "decoder 1"]  # people count layers from 1
    np.testing.assert_allclose(history.matrix(DEPTH), [[0.0, 2.0]])
